const MARKER = Symbol.for("tidemark.invariant-error");

/**
 * A rule the code itself guarantees was broken: a bug, or data written behind Tidemark's back.
 * No user action leads here; the HTTP layer answers `internal_error` and the server log has it.
 */
export class InvariantError extends Error {
  readonly [MARKER] = true;

  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "InvariantError";
  }

  /** Whether `value` is an InvariantError, or one of its kinds (also across module copies). */
  static isInstance(value: unknown): value is InvariantError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
