const MARKER = Symbol.for("tidemark.model-error");

/**
 * How a model call failed:
 * - `retryable`: worth another attempt if nothing was streamed yet (429, 5xx, connection reset);
 * - `cancelled`: the provider says the request was cancelled (HTTP 499);
 * - `rejected`: anything else; the run fails with `provider_error`.
 */
export type ModelErrorKind = "retryable" | "cancelled" | "rejected";

/**
 * A classified model failure. Its `message` is safe to show a client: it never carries an API
 * key or the upstream body (those stay in `cause`, for the server log and traces).
 */
export class ModelError extends Error {
  readonly [MARKER] = true;
  readonly kind: ModelErrorKind;
  /** The upstream HTTP status, if there was one. */
  readonly status: number | undefined;
  /** The provider's Retry-After, in ms, if it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    kind: ModelErrorKind,
    message: string,
    options: { status?: number; retryAfterMs?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "ModelError";
    this.kind = kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** Whether `error` is a ModelError (also across module copies). */
  static isInstance(error: unknown): error is ModelError {
    return typeof error === "object" && error !== null && MARKER in error;
  }

  /** The error for an upstream HTTP status. */
  static fromStatus(status: number, options: { retryAfterMs?: number; cause?: unknown } = {}): ModelError {
    if (status === 499) return new ModelError("cancelled", "The model provider cancelled the request.", { status, ...options });
    const isRetryable = status === 408 || status === 409 || status === 429 || status >= 500;
    const meaning = STATUS_MEANINGS[status];
    return new ModelError(isRetryable ? "retryable" : "rejected", `The model provider answered HTTP ${status}${meaning ? ` (${meaning})` : ""}.`, {
      status,
      ...options,
    });
  }
}

/** What an upstream status most likely means, said without anything from the upstream body. */
const STATUS_MEANINGS: Readonly<Record<number, string>> = {
  400: "it refused the request",
  401: "the API key is missing or was refused",
  403: "the API key may not use this model",
  404: "no such model or endpoint",
  429: "rate limited or out of quota",
};

/** Parses a Retry-After header (seconds or an HTTP date) into ms. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
