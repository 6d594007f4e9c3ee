import { createId, type RunRecord } from "../src/core/index.js";
import type { Store } from "../src/store/index.js";
import { startClaimedRun } from "./bench-support.js";

/** The thread that checkpoint-cost and pg-checkpoint-cost grow and time, through the Store API. */

const TENANT = "bench";

/** A short assistant answer (~400 characters), the same for every publish. */
export const PUBLISHED_CONTENT = "A checkpointed answer. ".repeat(18);

/** A thread with one running run that publishes message after message (each with its checkpoint). */
export async function createGrowingThread(store: Store): Promise<{ run: RunRecord; publish(): Promise<void> }> {
  const now = Date.now();
  const thread = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now });
  const run = await startClaimedRun(store, TENANT, thread.threadId, "Grow this thread.");
  let step = 0;
  return {
    run,
    async publish() {
      step++;
      const result = await store.publishMessage({
        tenantId: TENANT,
        runId: run.runId,
        messageId: createId("msg"),
        checkpointId: createId("cp"),
        role: "assistant",
        content: PUBLISHED_CONTENT,
        completedStepId: `model-${step}`,
        stats: { llmCallCount: 1, inputTokens: 100, outputTokens: 80, tokensEstimated: false },
        // The run stays `running`, so one run can grow the thread to any length.
        complete: false,
        now: Date.now(),
      });
      if (result.kind !== "published") throw new Error("publish was rejected");
    },
  };
}
