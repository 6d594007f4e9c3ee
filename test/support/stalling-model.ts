import type { ChatModel, ModelStreamPart } from "../../src/core/model.js";

/**
 * A model whose stream stalls: each call (an attempt) streams its parts, then waits until its
 * signal aborts and rejects with the reason, as a provider that stopped sending does. `signals`
 * holds each call's signal, in order; a call beyond `attempts` streams nothing.
 */
export function stallingAttempts(attempts: readonly (readonly ModelStreamPart[])[]): { model: ChatModel; signals: AbortSignal[] } {
  const signals: AbortSignal[] = [];
  const model: ChatModel = {
    id: "stalling",
    async *stream(_request, { signal }) {
      const parts = attempts[signals.length] ?? [];
      signals.push(signal);
      for (const part of parts) yield part;
      await new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason as Error), { once: true }));
    },
  };
  return { model, signals };
}
