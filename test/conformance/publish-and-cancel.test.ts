/**
 * The store contract for publishing and cancelling, on every adapter: a publish appends one
 * checkpoint on the previous head, and compare-and-set decides the race with a cancel.
 */
import { describe, expect, it } from "vitest";
import { createId } from "../../src/core/index.js";
import { adapters } from "./adapters.js";
import { expectKind, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick, newThread, newRun, runningRun, publishInput, cancel, snapshot } = fx;

describe.each(adapters)("publishMessage ($name)", (adapter) => {
  fx.use(adapter);

  it("appends a checkpoint on the previous head, one version up, with the stats", async () => {
    const run = await runningRun();
    const before = (await store.getThread(TENANT, run.threadId))!;
    const input = publishInput(run, { stats: { llmCallCount: 1, outputTokens: 12, inputTokens: 5 } });

    const published = expectKind(await store.publishMessage(input), "published");

    expect(published.checkpoint).toMatchObject({
      checkpointId: input.checkpointId,
      parentCheckpointId: before.headCheckpointId,
      stateVersion: before.stateVersion + 1,
      kind: "message_published",
      messageId: input.messageId,
      completedStepId: "step-1",
    });
    expect(published.message).toMatchObject({ position: 1, role: "assistant", stateVersion: 3, checkpointId: input.checkpointId });
    expect(published.thread).toMatchObject({ stateVersion: 3, headCheckpointId: input.checkpointId, activeRunId: run.runId });
    expect(published.thread.stats).toMatchObject({ messageCount: 2, llmCallCount: 1, outputTokens: 12, inputTokens: 5 });
    expect(published.run).toMatchObject({ status: "running", stateVersion: 3, publishedMessageId: input.messageId });
    expect(published.run.stats).toMatchObject({ messageCount: 2, llmCallCount: 1, outputTokens: 12, inputTokens: 5 });
    expect(await store.getThread(TENANT, run.threadId)).toEqual(published.thread);
    expect(await store.getRun(TENANT, run.runId)).toEqual(published.run);
  });

  it("completes the run in the same transaction when asked", async () => {
    const run = await runningRun();

    const published = expectKind(await store.publishMessage(publishInput(run, { complete: true })), "published");

    expect(published.run).toMatchObject({ status: "completed", leaseOwner: null, endedAt: fx.now });
    expect(published.thread.activeRunId).toBeNull();
    expect(await store.listActiveRuns(TENANT, run.threadId)).toEqual([]);
  });

  it("writes checkpoints of constant size, whatever the thread's length (O(1))", async () => {
    const run = await runningRun();
    const checkpointIds: string[] = [];
    for (let index = 0; index < 500; index++) {
      const input = publishInput(run, {
        content: `message ${String(index).padStart(3, "0")} ${"x".repeat(1_000)}`,
        completedStepId: `step-${String(index).padStart(3, "0")}`,
      });
      expectKind(await store.publishMessage(input), "published");
      checkpointIds.push(input.checkpointId);
    }

    const checkpoints = await store.listCheckpoints(TENANT, run.threadId);
    const sizeOf = (checkpointId: string): number =>
      JSON.stringify(checkpoints.find((checkpoint) => checkpoint.checkpointId === checkpointId)).length;
    const after10 = sizeOf(checkpointIds[9]!);
    const after500 = sizeOf(checkpointIds[499]!);

    // Only the state_version's digits may grow (12 → 502); ~500 KB of messages add nothing.
    expect(after500 - after10).toBeLessThanOrEqual(2);
    expect(after500).toBeLessThan(1_000);
    expect(JSON.stringify(checkpoints.at(-1))).not.toContain("message 498");
    expect(await store.listMessages(TENANT, run.threadId)).toHaveLength(501);
  });

  it("after an accepted cancel, is rejected and writes nothing (sticky)", async () => {
    const run = await runningRun();
    expectKind(await cancel(run), "accepted");
    const before = await snapshot(TENANT, run.threadId, run.runId);

    const late = expectKind(await store.publishMessage(publishInput(run, { complete: true })), "rejected");
    const later = await store.publishMessage(publishInput(run, { stats: { llmCallCount: 1 } }));

    expect(late.run?.status).toBe("cancel_requested");
    expect(later.kind).toBe("rejected");
    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
  });

  it("is fenced by attempt: a worker whose run was handed to a new attempt publishes nothing", async () => {
    const run = await runningRun({ owner: "worker-1" });
    // Worker 1 lost its lease; recovery handed the run back and worker 2 claimed attempt 2.
    expect((await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["running"], to: "queued", now: tick() }))?.attempt).toBe(2);
    const taken = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "worker-2", leaseExpiresAt: fx.now + 30_000, now: tick() });
    expect(taken?.attempt).toBe(2);
    const before = await snapshot(TENANT, run.threadId, run.runId);

    const stale = await store.publishMessage(publishInput(run, { attempt: run.attempt, complete: true }));

    expect(stale.kind).toBe("rejected");
    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
    expect((await store.publishMessage(publishInput(taken!, { attempt: 2 }))).kind).toBe("published");
  });

  it("is rejected for a queued or unknown run", async () => {
    const thread = await newThread();
    const queued = await newRun(thread.threadId);

    expect((await store.publishMessage(publishInput(queued))).kind).toBe("rejected");
    expect(expectKind(await store.publishMessage(publishInput({ ...queued, runId: "run_missing" })), "rejected").run).toBeUndefined();
  });
});

describe.each(adapters)("requestCancel ($name)", (adapter) => {
  fx.use(adapter);

  it("cancels a queued run at once and frees the thread", async () => {
    const thread = await newThread();
    const run = await newRun(thread.threadId);

    const accepted = expectKind(await cancel(run, "stop_before_start"), "accepted");

    expect(accepted.run).toMatchObject({
      status: "cancelled",
      cancelReason: "stop_before_start",
      cancelStateVersion: 3,
      cancelCheckpointId: accepted.checkpoint.checkpointId,
      endedAt: fx.now,
    });
    expect(accepted.thread).toMatchObject({ stateVersion: 3, activeRunId: null, headCheckpointId: accepted.checkpoint.checkpointId });
    expect(accepted.checkpoint).toMatchObject({ kind: "cancel_accepted", stateVersion: 3, resumePolicy: "regenerate_pending_step" });
  });

  it("moves a running run to cancel_requested with a cancel_accepted checkpoint", async () => {
    const run = await runningRun();
    const before = (await store.getThread(TENANT, run.threadId))!;

    const accepted = expectKind(await cancel(run), "accepted");

    expect(accepted.run).toMatchObject({
      status: "cancel_requested",
      cancelRequestedAt: fx.now,
      cancelReason: "user_stop",
      cancelStateVersion: before.stateVersion + 1,
      stateVersion: before.stateVersion + 1,
      endedAt: null,
    });
    expect(accepted.checkpoint).toMatchObject({
      kind: "cancel_accepted",
      parentCheckpointId: before.headCheckpointId,
      stateVersion: before.stateVersion + 1,
      pendingStep: { stepId: "step-1", kind: "model", inputHash: "h1" },
      resumePolicy: "regenerate_pending_step",
      cancelledGeneration: null,
    });
    // The worker has not stopped yet: the thread stays busy until it confirms.
    expect(accepted.thread.activeRunId).toBe(run.runId);
  });

  it("publishes a live turn's heard answer with the cancel: one checkpoint, marked interrupted, in history and the stats", async () => {
    const run = await runningRun();
    const before = (await store.getThread(TENANT, run.threadId))!;
    const heard = { messageId: createId("msg"), content: "The weather tod" };

    const accepted = expectKind(
      await store.requestCancel({ tenantId: TENANT, runId: run.runId, reason: "user_speech", checkpointId: createId("cp"), pendingStep: null, now: tick(), heard }),
      "accepted",
    );

    expect(accepted.checkpoint).toMatchObject({ kind: "cancel_accepted", stateVersion: before.stateVersion + 1, messageId: heard.messageId });
    expect(accepted.heardMessage).toMatchObject({ ...heard, role: "assistant", interrupted: true, position: 1, stateVersion: before.stateVersion + 1 });
    expect(accepted.run).toMatchObject({ status: "cancel_requested", publishedMessageId: heard.messageId });
    expect(accepted.thread.stats.messageCount).toBe((before.stats.messageCount ?? 0) + 1);
    expect((await store.listMessages(TENANT, run.threadId)).at(-1)).toEqual(accepted.heardMessage);
  });

  it("publishes no heard answer for a run that never started, or an empty one", async () => {
    const thread = await newThread();
    const queued = await newRun(thread.threadId);
    const running = await runningRun();
    for (const run of [queued, running]) {
      const heard = { messageId: createId("msg"), content: run === queued ? "never sent" : "" };
      const accepted = expectKind(
        await store.requestCancel({ tenantId: TENANT, runId: run.runId, reason: "user_speech", checkpointId: createId("cp"), pendingStep: null, now: tick(), heard }),
        "accepted",
      );
      expect(accepted.heardMessage).toBeUndefined();
      expect(accepted.checkpoint.messageId).toBeNull();
      expect((await store.listMessages(TENANT, run.threadId)).map((message) => message.messageId)).not.toContain(heard.messageId);
    }
  });

  it("answers a repeat with already_requested and writes nothing", async () => {
    const run = await runningRun();
    await cancel(run, "first");
    const before = await snapshot(TENANT, run.threadId, run.runId);

    const repeat = expectKind(await cancel(run, "second"), "already_requested");
    await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["cancel_requested"], to: "cancelling", now: tick() });
    const whileCancelling = await cancel(run, "third");

    expect(repeat.run.cancelReason).toBe("first");
    expect(whileCancelling.kind).toBe("already_requested");
    expect((await store.getThread(TENANT, run.threadId))?.stateVersion).toBe(before.thread?.stateVersion);
    expect(await store.listCheckpoints(TENANT, run.threadId)).toEqual(before.checkpoints);
  });

  it.each(["completed", "failed"] as const)("answers already_terminal for a %s run", async (to) => {
    const run = await runningRun();
    await store.finishRun({ tenantId: TENANT, runId: run.runId, to, from: ["running"], stats: {}, now: tick() });
    const before = await snapshot(TENANT, run.threadId, run.runId);

    const late = expectKind(await cancel(run), "already_terminal");

    expect(late.run.status).toBe(to);
    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
  });

  it("answers not_found for an unknown run", async () => {
    const run = await runningRun();
    expect((await cancel({ ...run, runId: "run_missing" })).kind).toBe("not_found");
  });

  it("takes the step a cancel accepted elsewhere caught from the worker that finishes the run", async () => {
    const run = await runningRun();
    // Accepted by a process that does not execute the run: it cannot name the step.
    const accepted = expectKind(
      await store.requestCancel({ tenantId: TENANT, runId: run.runId, reason: "user_stop", checkpointId: createId("cp"), pendingStep: null, now: tick() }),
      "accepted",
    );
    const toolStep = { stepId: "model-1/call-1", kind: "tool" as const, inputHash: "h2" };

    await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, pendingStep: toolStep, now: tick() });

    const checkpoint = (await store.listCheckpoints(TENANT, run.threadId)).find((each) => each.checkpointId === accepted.checkpoint.checkpointId);
    expect(checkpoint).toMatchObject({ pendingStep: toolStep, resumePolicy: "reuse_tool_result", stateVersion: accepted.checkpoint.stateVersion });
  });

  it("keeps the step named when the cancel was accepted", async () => {
    const run = await runningRun();
    const accepted = expectKind(await cancel(run), "accepted");

    await store.finishRun({
      tenantId: TENANT,
      runId: run.runId,
      to: "cancelled",
      from: ["cancel_requested"],
      stats: {},
      pendingStep: { stepId: "other", kind: "tool", inputHash: "h9" },
      now: tick(),
    });

    const checkpoint = (await store.listCheckpoints(TENANT, run.threadId)).find((each) => each.checkpointId === accepted.checkpoint.checkpointId);
    expect(checkpoint).toMatchObject({ pendingStep: { stepId: "step-1", kind: "model", inputHash: "h1" }, resumePolicy: "regenerate_pending_step" });
  });
});
