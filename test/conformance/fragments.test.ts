/**
 * saveFragment and deleteMessage on every adapter: each is one transition (version + 1 with its
 * checkpoint), a fragment is saved only for a terminal run at the end of the thread, only a
 * fragment can be deleted, and the store stays clean for `tidemark check`.
 */
import { describe, expect, it } from "vitest";
import { checkStore } from "../../src/check/index.js";
import { createId, type RunRecord } from "../../src/core/index.js";
import { adapters } from "./adapters.js";
import { expectKind, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick } = fx;

/** A new thread with one run, claimed; `threadId` reuses a thread. */
async function runningRun(threadId?: string): Promise<RunRecord> {
  const id = threadId ?? (await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: tick() })).threadId;
  const created = await store.createRun({
    tenantId: TENANT,
    runId: createId("run"),
    threadId: id,
    input: { role: "user", content: "hello" },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: "h",
    model: "demo",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    now: tick(),
  });
  const { run } = expectKind(created, "created");
  return (await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w", leaseExpiresAt: fx.now + 30_000, now: tick() }))!;
}

/** A run stopped by the user: cancel accepted, then the worker confirmed it. */
async function stoppedRun(threadId?: string): Promise<RunRecord> {
  const run = await runningRun(threadId);
  expectKind(
    await store.requestCancel({ tenantId: TENANT, runId: run.runId, reason: "stop", checkpointId: createId("cp"), pendingStep: null, now: tick() }),
    "accepted",
  );
  const from = ["cancel_requested"] as const;
  return (await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from, stats: {}, now: tick() }))!;
}

const save = (run: RunRecord, messageId = createId("msg"), content = "what the user saw") =>
  store.saveFragment({ tenantId: TENANT, runId: run.runId, messageId, checkpointId: createId("cp"), content, now: tick() });

const remove = (threadId: string, messageId: string) =>
  store.deleteMessage({ tenantId: TENANT, threadId, messageId, checkpointId: createId("cp"), now: tick() });

async function expectClean(): Promise<void> {
  expect((await checkStore(store)).violations).toEqual([]);
}

describe.each(adapters)("saveFragment ($name)", (adapter) => {
  fx.use(adapter);

  it("appends an assistant fragment of the run with a fragment_saved checkpoint, one version up", async () => {
    const run = await stoppedRun();
    const before = (await store.getThread(TENANT, run.threadId))!;
    const messageId = createId("msg");

    const { message, checkpoint, thread } = expectKind(await save(run, messageId, "Tidemark keeps"), "saved");

    expect(thread.stateVersion).toBe(before.stateVersion + 1);
    expect(thread.headCheckpointId).toBe(checkpoint.checkpointId);
    expect(thread.stats).toEqual(before.stats);
    expect(checkpoint).toMatchObject({ kind: "fragment_saved", runId: run.runId, messageId, parentCheckpointId: before.headCheckpointId });
    expect(message).toMatchObject({
      messageId,
      role: "assistant",
      content: "Tidemark keeps",
      runId: run.runId,
      publicationStatus: "fragment",
      stateVersion: thread.stateVersion,
      checkpointId: checkpoint.checkpointId,
    });
    expect((await store.listMessages(TENANT, run.threadId)).at(-1)).toEqual(message);
    expect((await store.getThread(TENANT, run.threadId))?.stateVersion).toBe(thread.stateVersion);
    await expectClean();
  });

  it("refuses a run that is not terminal, an unknown run and another tenant's run, writing nothing", async () => {
    const run = await runningRun();
    const before = await store.listCheckpoints(TENANT, run.threadId);

    expectKind(await save(run), "run_not_terminal");
    expectKind(await store.saveFragment({ tenantId: TENANT, runId: createId("run"), messageId: createId("msg"), checkpointId: createId("cp"), content: "x", now: tick() }), "run_not_found");
    expectKind(await store.saveFragment({ tenantId: "tenant_b", runId: run.runId, messageId: createId("msg"), checkpointId: createId("cp"), content: "x", now: tick() }), "run_not_found");

    expect(await store.listCheckpoints(TENANT, run.threadId)).toEqual(before);
  });

  it("answers exists for a published message and for a second fragment of the same message", async () => {
    const run = await runningRun();
    const published = await store.publishMessage({
      tenantId: TENANT,
      runId: run.runId,
      messageId: createId("msg"),
      checkpointId: createId("cp"),
      role: "assistant",
      content: "a whole answer",
      completedStepId: "step-1",
      stats: {},
      complete: true,
      now: tick(),
    });
    const { message } = expectKind(published, "published");
    expect(expectKind(await save(run, message.messageId), "exists").message.publicationStatus).toBe("published");

    const stopped = await stoppedRun();
    const first = expectKind(await save(stopped), "saved").message;
    const again = expectKind(await save(stopped, first.messageId, "other text"), "exists");
    expect(again.message).toEqual(first);
    await expectClean();
  });

  it("refuses while another run of the thread is active, or once the thread has moved on", async () => {
    const stopped = await stoppedRun();
    const next = await runningRun(stopped.threadId);
    expectKind(await save(stopped), "run_in_progress");

    await store.finishRun({ tenantId: TENANT, runId: next.runId, to: "failed", from: ["running"], stats: {}, failureReason: "error", now: tick() });
    expectKind(await save(stopped), "thread_moved_on");
    await expectClean();
  });
});

describe.each(adapters)("deleteMessage ($name)", (adapter) => {
  fx.use(adapter);

  it("marks a fragment deleted with a message_deleted checkpoint, one version up; the row stays", async () => {
    const run = await stoppedRun();
    const saved = expectKind(await save(run), "saved");

    const { message, checkpoint, thread } = expectKind(await remove(run.threadId, saved.message.messageId), "deleted");

    expect(thread.stateVersion).toBe(saved.thread.stateVersion + 1);
    expect(checkpoint).toMatchObject({ kind: "message_deleted", messageId: message.messageId, parentCheckpointId: saved.checkpoint.checkpointId });
    expect(message.publicationStatus).toBe("deleted");
    const stored = (await store.listMessages(TENANT, run.threadId)).find((entry) => entry.messageId === message.messageId);
    // Append-only: only the status changed; the row keeps the version and checkpoint that saved it.
    expect(stored).toEqual({ ...saved.message, publicationStatus: "deleted" });
    await expectClean();
  });

  it("refuses a published message, a second delete, an unknown message, another thread and another tenant", async () => {
    const run = await stoppedRun();
    const saved = expectKind(await save(run), "saved").message;
    const input = (await store.listMessages(TENANT, run.threadId))[0]!;
    const other = await stoppedRun();

    expect(expectKind(await remove(run.threadId, input.messageId), "not_deletable").message.publicationStatus).toBe("published");
    expectKind(await remove(other.threadId, saved.messageId), "message_not_found");
    expectKind(await remove(run.threadId, createId("msg")), "message_not_found");
    expectKind(await store.deleteMessage({ tenantId: "tenant_b", threadId: run.threadId, messageId: saved.messageId, checkpointId: createId("cp"), now: tick() }), "thread_not_found");
    const version = (await store.getThread(TENANT, run.threadId))!.stateVersion;

    expectKind(await remove(run.threadId, saved.messageId), "deleted");
    expectKind(await remove(run.threadId, saved.messageId), "message_not_found");
    expect((await store.getThread(TENANT, run.threadId))!.stateVersion).toBe(version + 1);
    // A deleted fragment's id is taken for good: saving it again is refused, not a second row.
    expect(expectKind(await save(run, saved.messageId), "exists").message.publicationStatus).toBe("deleted");
    await expectClean();
  });
});
