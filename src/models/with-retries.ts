import { abortableDelay } from "../core/abortable-delay.js";
import type { ChatModel, ModelStreamPart } from "../core/model.js";
import { ModelError } from "../core/model-error.js";

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
  const maxRetries = options.maxRetries ?? 3;
  const baseDelayMs = options.baseDelayMs ?? 250;
  const maxDelayMs = options.maxDelayMs ?? 8_000;
  return {
    id: model.id,
    title: model.title?.bind(model),
    async *stream(request, { signal }): AsyncGenerator<ModelStreamPart> {
      for (let attempt = 0; ; attempt++) {
        let hasStreamed = false;
        try {
          for await (const part of model.stream(request, { signal })) {
            hasStreamed = true;
            yield part;
          }
          return;
        } catch (error) {
          if (signal.aborted) throw signal.reason;
          const isRetryable = ModelError.isInstance(error) && error.kind === "retryable";
          if (hasStreamed || !isRetryable || attempt >= maxRetries) throw error;
          const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** attempt * (0.8 + Math.random() * 0.4));
          await abortableDelay(Math.min(maxDelayMs, Math.max(backoff, error.retryAfterMs ?? 0)), signal);
        }
      }
    },
  };
}
