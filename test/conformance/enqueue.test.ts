/**
 * Enqueued runs on every adapter: a run may wait behind the thread's active run, touching nothing
 * until it is admitted, oldest first, as a transition of its own.
 */
import { describe, expect, it } from "vitest";
import { createId, type RunRecord } from "../../src/core/index.js";
import type { CreateRunInput } from "../../src/store/store.js";
import { adapters } from "./adapters.js";
import { StoreFixture } from "./fixtures.js";

const T = "tenant";
const fx = new StoreFixture();
const { store } = fx;

function runInput(threadId: string, content: string, enqueue = false): CreateRunInput {
  return {
    tenantId: T,
    runId: createId("run"),
    threadId,
    input: { role: "user", content },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: content,
    model: "demo",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    enqueue,
    now: ++fx.now,
  };
}

async function busyThread(): Promise<{ threadId: string; active: RunRecord }> {
  const thread = await store.createThread({ tenantId: T, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: ++fx.now });
  const created = await store.createRun(runInput(thread.threadId, "first"));
  if (created.kind !== "created") throw new Error(created.kind);
  return { threadId: thread.threadId, active: created.run };
}

describe.each(adapters)("enqueued runs ($name)", (adapter) => {
  fx.use(adapter);

  it("wait without touching the thread: no message, no version, the active run unchanged", async () => {
    const { threadId, active } = await busyThread();
    const before = await store.getThread(T, threadId);
    const enqueued = await store.createRun(runInput(threadId, "second", true));
    expect(enqueued.kind).toBe("enqueued");
    if (enqueued.kind !== "enqueued") return;
    expect(enqueued.run).toMatchObject({ status: "queued", isWaiting: true });
    expect(await store.getThread(T, threadId)).toEqual(before);
    expect((await store.listMessages(T, threadId)).map((message) => message.content)).toEqual(["first"]);
    expect(before?.activeRunId).toBe(active.runId);
    // Without enqueue a busy thread still refuses.
    expect((await store.createRun(runInput(threadId, "third"))).kind).toBe("run_in_progress");
  });

  it("are counted as waiting, apart from queued runs nobody has claimed yet, across tenants (countQueuedRuns)", async () => {
    const before = await store.countQueuedRuns();
    const { threadId, active } = await busyThread();
    // The active run is queued until a worker claims it.
    expect(await store.countQueuedRuns()).toEqual({ unclaimed: before.unclaimed + 1, waiting: before.waiting });
    await store.createRun(runInput(threadId, "second", true));
    await store.createRun(runInput(threadId, "third", true));
    expect(await store.countQueuedRuns()).toEqual({ unclaimed: before.unclaimed + 1, waiting: before.waiting + 2 });
    const claimed = await store.claimRun({ tenantId: T, runId: active.runId, owner: "w", leaseExpiresAt: fx.now + 1_000, now: ++fx.now });
    expect(claimed?.status).toBe("running");
    expect(await store.countQueuedRuns()).toEqual({ unclaimed: before.unclaimed, waiting: before.waiting + 2 });
  });

  it("are admitted oldest first, only when the thread is free, with their input accepted as a transition", async () => {
    const { threadId, active } = await busyThread();
    const second = await store.createRun(runInput(threadId, "second", true));
    const third = await store.createRun(runInput(threadId, "third", true));
    expect(await store.admitNextRun(T, threadId, createId("cp"), ++fx.now)).toBeUndefined();
    await store.claimRun({ tenantId: T, runId: active.runId, owner: "w", leaseExpiresAt: fx.now + 10_000, now: ++fx.now });
    await store.finishRun({ tenantId: T, runId: active.runId, to: "completed", from: ["running"], stats: {}, now: ++fx.now });
    const version = (await store.getThread(T, threadId))!.stateVersion;
    const admitted = await store.admitNextRun(T, threadId, createId("cp"), ++fx.now);
    expect(admitted?.runId).toBe(second.kind === "enqueued" ? second.run.runId : "");
    expect(admitted).toMatchObject({ isWaiting: false, status: "queued", stateVersion: version + 1 });
    const thread = await store.getThread(T, threadId);
    expect(thread).toMatchObject({ activeRunId: admitted?.runId, stateVersion: version + 1 });
    expect((await store.listMessages(T, threadId)).map((message) => message.content)).toEqual(["first", "second"]);
    // The third waits for the second.
    expect(await store.admitNextRun(T, threadId, createId("cp"), ++fx.now)).toBeUndefined();
    expect(third.kind).toBe("enqueued");
  });

  it("a cancelled waiting run leaves the active run alone, and is never claimed or admitted", async () => {
    const { threadId, active } = await busyThread();
    const waiting = await store.createRun(runInput(threadId, "second", true));
    if (waiting.kind !== "enqueued") throw new Error(waiting.kind);
    const cancel = await store.requestCancel({ tenantId: T, runId: waiting.run.runId, reason: "user", checkpointId: createId("cp"), pendingStep: null, now: ++fx.now });
    expect(cancel.kind === "accepted" && cancel.run.status).toBe("cancelled");
    expect((await store.getThread(T, threadId))?.activeRunId).toBe(active.runId);
    expect((await store.listRecoverableRuns(fx.now + 1_000_000, fx.now + 1_000_000)).map((run) => run.runId)).not.toContain(waiting.run.runId);
    await store.claimRun({ tenantId: T, runId: active.runId, owner: "w", leaseExpiresAt: fx.now + 10_000, now: ++fx.now });
    await store.finishRun({ tenantId: T, runId: active.runId, to: "completed", from: ["running"], stats: {}, now: ++fx.now });
    expect(await store.admitNextRun(T, threadId, createId("cp"), ++fx.now)).toBeUndefined();
  });

  it("recovery finds threads whose admission was lost, and a waiting run is never taken for an orphan", async () => {
    const { threadId, active } = await busyThread();
    const waiting = await store.createRun(runInput(threadId, "second", true));
    if (waiting.kind !== "enqueued") throw new Error(waiting.kind);
    expect(await store.listThreadsWithWaitingRuns()).toEqual([]);
    expect((await store.listRecoverableRuns(fx.now + 1_000_000, fx.now + 1_000_000)).map((run) => run.runId)).toEqual([active.runId]);
    await store.requestCancel({ tenantId: T, runId: active.runId, reason: "user", checkpointId: createId("cp"), pendingStep: null, now: ++fx.now });
    expect(await store.listThreadsWithWaitingRuns()).toEqual([{ tenantId: T, threadId }]);
  });
});
