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

/** A thread created at `now` with one run accepted at `now + 1` and claimed by `owner` at `now + 2` (a lease of 60 s). */
export async function claimedRunOnNewThread(
  store: Store,
  options: { tenantId: string; threadId: string; now: number; owner?: string },
): Promise<RunRecord> {
  const { tenantId, threadId, now, owner = "w" } = options;
  await store.createThread({ tenantId, threadId, checkpointId: createId("cp"), metadata: {}, now });
  const created = await store.createRun({
    tenantId,
    runId: createId("run"),
    threadId,
    input: { role: "user", content: "hello" },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: "hash-hello",
    model: "demo",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    now: now + 1,
  });
  if (created.kind !== "created") throw new Error(`run not created: ${created.kind}`);
  const claimed = await store.claimRun({ tenantId, runId: created.run.runId, owner, leaseExpiresAt: now + 60_000, now: now + 2 });
  if (!claimed) throw new Error("the run could not be claimed");
  return claimed;
}
