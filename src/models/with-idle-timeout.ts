import type { ChatModel, ModelStreamPart } from "../core/model.js";
import { ModelError } from "../core/model-error.js";

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
  return {
    id: model.id,
    title: model.title?.bind(model),
    async *stream(request, { signal }): AsyncGenerator<ModelStreamPart> {
      signal.throwIfAborted();
      const controller = new AbortController();
      const forwardAbort = (): void => controller.abort(signal.reason);
      signal.addEventListener("abort", forwardAbort, { once: true });
      const stalled = new ModelError("retryable", `The model provider sent nothing for ${Math.round(idleTimeoutMs / 1000)} s.`);
      // One timer for the whole stream, re-armed per part: a new one per chunk would cost an allocation and two list operations.
      let isWaiting = true;
      const timer = setTimeout(function checkStalled() {
        if (isWaiting) controller.abort(stalled);
      }, idleTimeoutMs);
      timer.unref();
      try {
        for await (const part of model.stream(request, { signal: controller.signal })) {
          isWaiting = false;
          yield part;
          isWaiting = true;
          timer.refresh();
        }
      } catch (error) {
        if (controller.signal.reason === stalled && !signal.aborted) throw stalled;
        throw error;
      } finally {
        clearTimeout(timer);
        signal.removeEventListener("abort", forwardAbort);
      }
    },
  };
}
