const MARKER = Symbol.for("tidemark.shield-timeout-error");

/**
 * The bound of a shielded piece of work ran out after a cancel was requested: the work was told
 * to stop (its signal aborted with this error) and its caller no longer waits for it. Its outcome
 * is unknown, and the caller says so (a tool's commit becomes `outcome_unknown`).
 */
export class ShieldTimeoutError extends Error {
  readonly [MARKER] = true;
  /** How long the work was allowed to go on after the cancel was requested. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`non-cancellable work did not finish within ${timeoutMs} ms of the cancel request`);
    this.name = "ShieldTimeoutError";
    this.timeoutMs = timeoutMs;
  }

  /** Whether `value` is a ShieldTimeoutError (also across module copies). */
  static isInstance(value: unknown): value is ShieldTimeoutError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
