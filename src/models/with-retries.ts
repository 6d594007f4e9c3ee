import type { ChatModel } from "../core/model.js";
import { withResilience, type RetryPolicy } from "./resilient-stream.js";

/** Options for {@link withRetries}. */
export interface RetryOptions {
  /** Attempts after the first (default 3). */
  maxRetries?: number;
  /** The first backoff (default 250 ms), doubled each time with jitter, capped at `maxDelayMs`. */
  baseDelayMs?: number;
  /** The longest single wait, Retry-After included (default 8 s). */
  maxDelayMs?: number;
}

/**
 * Retries a model's stream on a retryable failure (429, 5xx, connection reset) that happened
 * before its first part, with bounded exponential backoff that a Stop interrupts at once.
 * Once anything was streamed, a failure is final: the partial generation is discarded, never
 * glued to a second one.
 */
export function withRetries(model: ChatModel, options: RetryOptions = {}): ChatModel {
  return withResilience(model, { retries: retryPolicy(options), idleTimeoutMs: 0 });
}

/** The policy `options` describe, with the defaults filled in. */
export function retryPolicy(options: RetryOptions = {}): RetryPolicy {
  return { maxRetries: options.maxRetries ?? 3, baseDelayMs: options.baseDelayMs ?? 250, maxDelayMs: options.maxDelayMs ?? 8_000 };
}
