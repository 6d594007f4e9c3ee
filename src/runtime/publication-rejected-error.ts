const MARKER = Symbol.for("tidemark.publication-rejected-error");

/** Thrown by a step whose result may not be published because the run stopped being `running`. */
export class PublicationRejectedError extends Error {
  readonly [MARKER] = true;
  readonly runId: string;

  constructor(runId: string) {
    super(`run ${runId} is no longer running; its output was not published`);
    this.name = "PublicationRejectedError";
    this.runId = runId;
  }

  /** Whether `value` is a PublicationRejectedError (also across module copies). */
  static isInstance(value: unknown): value is PublicationRejectedError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
