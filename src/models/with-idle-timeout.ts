import type { ChatModel } from "../core/model.js";
import { withResilience } from "./resilient-stream.js";

/** How long a model's stream may send nothing before it counts as stalled (default 5 minutes: reasoning models think quietly). */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000;

/** Options for {@link withIdleTimeout}. */
export interface IdleTimeoutOptions {
  /** The longest wait for the stream's next part (default {@link DEFAULT_IDLE_TIMEOUT_MS}); 0 turns it off. */
  idleTimeoutMs?: number;
}

/**
 * Ends a model's stream that sends nothing for `idleTimeoutMs` (an upstream that stalls with its
 * connection open): the request is aborted, which closes it, and the stream fails with a
 * retryable {@link ModelError}. Only the wait for the provider counts, never the consumer's time
 * between two parts. Under {@link withRetries}, a stall before the first part is retried and a
 * stall mid-answer ends the run `failed {provider_error}`.
 */
export function withIdleTimeout(model: ChatModel, options: IdleTimeoutOptions = {}): ChatModel {
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  if (idleTimeoutMs <= 0) return model;
  return withResilience(model, { retries: false, idleTimeoutMs });
}
