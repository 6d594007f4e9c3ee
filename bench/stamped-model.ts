import type { ChatModel, ModelStreamPart } from "../src/core/model.js";
import { absoluteNow } from "./absolute-clock.js";
import type { SharedPacer } from "./shared-pacer.js";

/** What the many-streams server's model does, and how the benchmark ends its runs. */
export interface StampedModel extends ChatModel {
  /** Chunks written so far, all runs together. */
  readonly chunksWritten: number;
  /** Every run ends (`finish`) at its next slot instead of writing another chunk. */
  finishAll(): void;
}

/**
 * The provider of the many-streams benchmark, in the server's process (no upstream socket, so the
 * server's 10,000 descriptors all go to SSE clients): each run writes one chunk per slot of the
 * shared pacer, and each chunk's text is the absolute time it was written ({@link absoluteNow},
 * ms), so a client can tell how long it took from here to its socket. A run ends once
 * {@link StampedModel.finishAll} is called, or after `maxChunks` chunks in any case.
 */
export function createStampedModel(pacer: SharedPacer, maxChunks: number): StampedModel {
  let chunksWritten = 0;
  let isFinishing = false;
  async function* stream(signal: AbortSignal): AsyncGenerator<ModelStreamPart> {
    const slot = pacer.takeSlot();
    let chunks = 0;
    while (!isFinishing && chunks < maxChunks) {
      await pacer.wait(slot, signal);
      if (isFinishing) break;
      chunks++;
      chunksWritten++;
      yield { type: "text-delta", text: `${absoluteNow().toFixed(3)} ` };
    }
    yield { type: "finish", finishReason: "stop", usage: { inputTokens: 1, outputTokens: chunks, isEstimated: false } };
  }
  return {
    id: "bench-stamped",
    stream: (_request, { signal }) => stream(signal),
    title: () => Promise.resolve("many streams"),
    get chunksWritten() {
      return chunksWritten;
    },
    finishAll() {
      isFinishing = true;
    },
  };
}
