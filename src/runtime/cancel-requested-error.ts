const MARKER = Symbol.for("tidemark.cancel-requested-error");

/**
 * A cancel's reason as the abort reason of a run's scope. Its `name` is `"AbortError"` on
 * purpose, and stays so: it is what `fetch`, providers and tools reject with when the run's
 * signal aborts, and code everywhere recognises an abort by that name.
 */
export class CancelRequestedError extends Error {
  readonly [MARKER] = true;
  /** Why the cancel was requested (e.g. `user_stop`, `client_disconnected`). */
  readonly reason: string;

  constructor(reason: string) {
    // A reason, not a failure: no stack is captured (it cost 0.1 ms of every Stop's path).
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(`cancel requested: ${reason}`);
    Error.stackTraceLimit = stackTraceLimit;
    this.name = "AbortError";
    this.reason = reason;
  }

  /** Whether `value` is a CancelRequestedError (also across module copies; its name alone is any abort's). */
  static isInstance(value: unknown): value is CancelRequestedError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
