import { ERROR_CODES, type ErrorCode } from "./error-codes.js";

const MARKER = Symbol.for("tidemark.error");

/** An error with a stable public `code`, safe `message` and typed `details` sent to clients. */
export class TidemarkError extends Error {
  readonly [MARKER] = true;
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, message: string, options: { details?: Record<string, unknown>; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = "TidemarkError";
    this.code = code;
    this.details = options.details ?? {};
  }

  /** The HTTP status for this error's code. */
  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  /** Whether `error` is a TidemarkError (also across module copies). */
  static isInstance(error: unknown): error is TidemarkError {
    return typeof error === "object" && error !== null && MARKER in error;
  }

  /** The JSON body sent to clients. */
  toJSON(): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.details };
  }
}
