const MARKER = Symbol.for("tidemark.lease-lost-error");

/**
 * This process could not renew a run's lease before the fence margin of its expiry, so it let go
 * of the run (decision 014): the run's work is aborted with this error, and any store call the
 * execution still makes is refused with it, so nothing more is written for the run here.
 */
export class LeaseLostError extends Error {
  readonly [MARKER] = true;

  constructor() {
    super("the run's lease could not be renewed in time: this process let go of the run");
    this.name = "LeaseLostError";
  }

  /** Whether `value` is a LeaseLostError (also across module copies). */
  static isInstance(value: unknown): value is LeaseLostError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
