/** Builds store states that only a crash or a race would leave, for tests that start from them. */
import { createId, type RunRecord } from "../../src/core/index.js";
import type { Store } from "../../src/store/index.js";

/** A run accepted on `threadId` and claimed by a worker that is not this process (it will never finish it). */
export async function runningRunOn(store: Store, threadId: string, content: string, tenantId = "local"): Promise<RunRecord> {
  const created = await store.createRun({
    tenantId,
    runId: createId("run"),
    threadId,
    input: { role: "user", content },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: content,
    model: "test",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    now: Date.now(),
  });
  if (created.kind !== "created") throw new Error(`createRun answered ${created.kind}`);
  const claimed = await store.claimRun({ tenantId, runId: created.run.runId, owner: "elsewhere", leaseExpiresAt: Date.now() + 60_000, now: Date.now() });
  if (!claimed) throw new Error("the run could not be claimed");
  return claimed;
}
