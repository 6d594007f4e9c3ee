/**
 * rollbackRun on every adapter (docs/decisions/012): a stopped run's input leaves the visible
 * result as one transition (version + 1 with a `run_rolled_back` checkpoint), only while nothing
 * came after it; a repeat answers the same; a branch forked before keeps the input; `tidemark
 * check` finds the store clean.
 */
import { describe, expect, it } from "vitest";
import { checkStore } from "../../src/check/index.js";
import { createId, type RunRecord } from "../../src/core/index.js";
import { adapters } from "./adapters.js";
import { expectKind, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick } = fx;

async function runningRun(threadId?: string): Promise<RunRecord> {
  const id = threadId ?? (await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: tick() })).threadId;
  const created = await store.createRun({
    tenantId: TENANT,
    runId: createId("run"),
    threadId: id,
    input: { role: "user", content: "take me back" },
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

async function stoppedRun(threadId?: string): Promise<RunRecord> {
  const run = await runningRun(threadId);
  expectKind(await store.requestCancel({ tenantId: TENANT, runId: run.runId, reason: "stop", checkpointId: createId("cp"), pendingStep: null, now: tick() }), "accepted");
  return (await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: tick() }))!;
}

const rollBack = (run: RunRecord, tenantId = TENANT) => store.rollbackRun({ tenantId, runId: run.runId, checkpointId: createId("cp"), now: tick() });

async function expectClean(): Promise<void> {
  expect((await checkStore(store)).violations).toEqual([]);
}

describe.each(adapters)("rollbackRun ($name)", (adapter) => {
  fx.use(adapter);

  it("marks a cancelled run's input deleted with a run_rolled_back checkpoint, one version up; the row stays; a repeat answers the same", async () => {
    const run = await stoppedRun();
    const before = (await store.getThread(TENANT, run.threadId))!;

    const { message, checkpoint, thread } = expectKind(await rollBack(run), "rolled_back");

    expect(thread.stateVersion).toBe(before.stateVersion + 1);
    expect(thread.headCheckpointId).toBe(checkpoint.checkpointId);
    expect(checkpoint).toMatchObject({ kind: "run_rolled_back", runId: run.runId, messageId: run.inputMessageId, parentCheckpointId: before.headCheckpointId });
    expect(message).toMatchObject({ messageId: run.inputMessageId, role: "user", publicationStatus: "deleted" });
    const messages = await store.listMessages(TENANT, run.threadId);
    expect(messages).toEqual([message]);
    // Append-only: the row keeps the version and checkpoint that published it.
    expect(message.stateVersion).toBeLessThan(checkpoint.stateVersion);

    const again = expectKind(await rollBack(run), "already_rolled_back");
    expect(again.checkpoint).toEqual(checkpoint);
    expect(again.message).toEqual(message);
    expect((await store.getThread(TENANT, run.threadId))!.stateVersion).toBe(thread.stateVersion);
    await expectClean();
  });

  it("rolls back a failed run; refuses a running, a completed and an unknown or foreign run, writing nothing", async () => {
    const failing = await runningRun();
    await store.finishRun({ tenantId: TENANT, runId: failing.runId, to: "failed", from: ["running"], stats: {}, failureReason: "error", now: tick() });
    expectKind(await rollBack(failing), "rolled_back");

    const running = await runningRun();
    const checkpoints = await store.listCheckpoints(TENANT, running.threadId);
    expect(expectKind(await rollBack(running), "not_rollbackable").reason).toBe("not_ended");
    const completed = (await store.finishRun({ tenantId: TENANT, runId: running.runId, to: "completed", from: ["running"], stats: {}, now: tick() }))!;
    expect(expectKind(await rollBack(completed), "not_rollbackable").reason).toBe("completed");
    expectKind(await rollBack(running, "tenant_b"), "run_not_found");
    expectKind(await store.rollbackRun({ tenantId: TENANT, runId: createId("run"), checkpointId: createId("cp"), now: tick() }), "run_not_found");
    expect((await store.listCheckpoints(TENANT, running.threadId)).length).toBe(checkpoints.length);
    await expectClean();
  });

  it("refuses once a message came after the input, or while another run is active", async () => {
    const published = await runningRun();
    await store.publishMessage({
      tenantId: TENANT,
      runId: published.runId,
      messageId: createId("msg"),
      checkpointId: createId("cp"),
      role: "assistant",
      content: "a tool call went out",
      completedStepId: "step-1",
      stats: {},
      complete: false,
      now: tick(),
    });
    expectKind(await store.requestCancel({ tenantId: TENANT, runId: published.runId, reason: "stop", checkpointId: createId("cp"), pendingStep: null, now: tick() }), "accepted");
    const stopped = (await store.finishRun({ tenantId: TENANT, runId: published.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: tick() }))!;
    expectKind(await rollBack(stopped), "thread_moved_on");

    const first = await stoppedRun();
    const next = await runningRun(first.threadId);
    expectKind(await rollBack(first), "run_in_progress");
    await store.finishRun({ tenantId: TENANT, runId: next.runId, to: "failed", from: ["running"], stats: {}, failureReason: "error", now: tick() });
    expectKind(await rollBack(first), "thread_moved_on");
    // The later run's own input is the last message: it can be taken back, and then the earlier one.
    expectKind(await rollBack(next), "rolled_back");
    expectKind(await rollBack(first), "rolled_back");
    await expectClean();
  });

  it("leaves a branch forked before the rollback with the input published", async () => {
    const run = await stoppedRun();
    const head = (await store.getThread(TENANT, run.threadId))!;
    const branch = expectKind(
      await store.forkThread({ tenantId: TENANT, sourceThreadId: run.threadId, fromCheckpointId: head.headCheckpointId, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: tick() }),
      "forked",
    );
    expectKind(await rollBack(run), "rolled_back");
    expect((await store.listMessages(TENANT, run.threadId)).map((message) => message.publicationStatus)).toEqual(["deleted"]);
    expect((await store.listMessages(TENANT, branch.thread.threadId)).map((message) => message.publicationStatus)).toEqual(["published"]);
    // A later fork of the rolled-back head does not see it.
    const after = (await store.getThread(TENANT, run.threadId))!;
    const late = expectKind(
      await store.forkThread({ tenantId: TENANT, sourceThreadId: run.threadId, fromCheckpointId: after.headCheckpointId, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: tick() }),
      "forked",
    );
    expect((await store.listMessages(TENANT, late.thread.threadId)).map((message) => message.publicationStatus)).toEqual(["deleted"]);
    await expectClean();
  });
});
