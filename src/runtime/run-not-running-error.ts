import type { RunStatus } from "../core/index.js";

const MARKER = Symbol.for("tidemark.run-not-running-error");

/**
 * A step could not go on because its run stopped being `running` meanwhile (a Stop was accepted,
 * or another path ended it): an operation the store refused to prepare, hand over or pause for.
 * The run's status decides how it ends; this only stops the step.
 */
export class RunNotRunningError extends Error {
  readonly [MARKER] = true;
  readonly runId: string;
  /** The run's status as the store saw it, when it said. */
  readonly runStatus: RunStatus | undefined;

  constructor(runId: string, message: string, runStatus?: RunStatus) {
    super(message);
    this.name = "RunNotRunningError";
    this.runId = runId;
    this.runStatus = runStatus;
  }

  /** Whether `value` is a RunNotRunningError (also across module copies). */
  static isInstance(value: unknown): value is RunNotRunningError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
