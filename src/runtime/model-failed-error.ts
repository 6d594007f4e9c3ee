const MARKER = Symbol.for("tidemark.model-failed-error");

/** Thrown when the model itself failed (as opposed to the runtime); `cause` is what it threw. */
export class ModelFailedError extends Error {
  readonly [MARKER] = true;

  constructor(cause: unknown) {
    super("the model failed", { cause });
    this.name = "ModelFailedError";
  }

  /** Whether `value` is a ModelFailedError (also across module copies). */
  static isInstance(value: unknown): value is ModelFailedError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
