/**
 * The SQLite adapter against the store contract: versions move by exactly one per transition,
 * compare-and-set decides every race, terminal is sticky, and tenants never see each other.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createId, type RunRecord, type RunStatus, type ThreadRecord } from "../../core/index.js";
import type { CreateRunInput, PublishMessageInput, Store } from "../store.js";
import { MIGRATIONS, migrate } from "./migrations.js";
import { createSqliteStore } from "./sqlite-store.js";

const TENANT = "tenant_a";
const OTHER_TENANT = "tenant_b";
const T0 = 1_700_000_000_000;

let store: Store;
let now: number;
const tick = (): number => (now += 1_000);

beforeEach(() => {
  store = createSqliteStore({ path: ":memory:" });
  now = T0;
});

afterEach(async () => {
  await store.close();
});

function expectKind<T extends { kind: string }, K extends T["kind"]>(result: T, kind: K): Extract<T, { kind: K }> {
  expect(result.kind).toBe(kind);
  return result as Extract<T, { kind: K }>;
}

async function newThread(tenantId = TENANT, threadId = createId("thr")): Promise<ThreadRecord> {
  return store.createThread({ tenantId, threadId, checkpointId: createId("cp"), metadata: { topic: "test" }, now: tick() });
}

function runInput(threadId: string, overrides: Partial<CreateRunInput> = {}): CreateRunInput {
  return {
    tenantId: TENANT,
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
    now: tick(),
    ...overrides,
  };
}

async function newRun(threadId: string, overrides: Partial<CreateRunInput> = {}): Promise<RunRecord> {
  return expectKind(await store.createRun(runInput(threadId, overrides)), "created").run;
}

/** A thread with one claimed (running) run. */
async function runningRun(tenantId = TENANT, owner = "worker-1"): Promise<RunRecord> {
  const thread = await newThread(tenantId);
  const run = await newRun(thread.threadId, { tenantId });
  const claimed = await store.claimRun({ tenantId, runId: run.runId, owner, leaseExpiresAt: now + 30_000, now: tick() });
  expect(claimed?.status).toBe("running");
  return claimed!;
}

function publishInput(run: RunRecord, overrides: Partial<PublishMessageInput> = {}): PublishMessageInput {
  return {
    tenantId: run.tenantId,
    runId: run.runId,
    messageId: createId("msg"),
    checkpointId: createId("cp"),
    role: "assistant",
    content: "an answer",
    completedStepId: "step-1",
    stats: {},
    complete: false,
    now: tick(),
    ...overrides,
  };
}

function cancel(run: RunRecord, reason = "user_stop") {
  return store.requestCancel({
    tenantId: run.tenantId,
    runId: run.runId,
    reason,
    checkpointId: createId("cp"),
    pendingStep: { stepId: "step-1", kind: "model", inputHash: "h1" },
    now: tick(),
  });
}

/** Everything a write could change about a thread, to prove a refused write changed nothing. */
async function snapshot(tenantId: string, threadId: string, runId: string) {
  return {
    thread: await store.getThread(tenantId, threadId),
    messages: await store.listMessages(tenantId, threadId),
    checkpoints: await store.listCheckpoints(tenantId, threadId),
    run: await store.getRun(tenantId, runId),
  };
}

describe("threads", () => {
  it("createThread starts at version 1 with a root checkpoint", async () => {
    const checkpointId = createId("cp");
    const thread = await store.createThread({ tenantId: TENANT, threadId: "thr_x", checkpointId, metadata: { a: 1 }, now: T0 });

    expect(thread).toMatchObject({
      threadId: "thr_x",
      status: "active",
      stateVersion: 1,
      headCheckpointId: checkpointId,
      activeRunId: null,
      title: null,
      metadata: { a: 1 },
      stats: { messageCount: 0, llmCallCount: 0 },
    });
    const checkpoints = await store.listCheckpoints(TENANT, "thr_x");
    expect(checkpoints).toHaveLength(1);
    expect(checkpoints[0]).toMatchObject({ checkpointId, parentCheckpointId: null, stateVersion: 1, kind: "thread_created" });
    expect(await store.listMessages(TENANT, "thr_x")).toEqual([]);
  });

  it("deleteThread hides the thread and refuses new runs on it", async () => {
    const thread = await newThread();

    expect(await store.deleteThread(TENANT, thread.threadId, tick())).toBe(true);

    expect(await store.getThread(TENANT, thread.threadId)).toBeUndefined();
    expect(await store.deleteThread(TENANT, thread.threadId, tick())).toBe(false);
    expect((await store.createRun(runInput(thread.threadId))).kind).toBe("thread_not_found");
  });

  it("saveTitle keeps the first title", async () => {
    const thread = await newThread();

    await store.saveTitle(TENANT, thread.threadId, "First", tick());
    await store.saveTitle(TENANT, thread.threadId, "Second", tick());

    expect((await store.getThread(TENANT, thread.threadId))?.title).toBe("First");
  });
});

describe("createRun", () => {
  it("publishes the user message with an input_accepted checkpoint, one version up", async () => {
    const thread = await newThread();
    const input = runInput(thread.threadId, { input: { role: "user", content: "what is a tidemark?" } });

    const created = expectKind(await store.createRun(input), "created");

    expect(created.thread.stateVersion).toBe(2);
    expect(created.thread.headCheckpointId).toBe(input.checkpointId);
    expect(created.thread.activeRunId).toBe(input.runId);
    expect(created.checkpoint).toMatchObject({
      checkpointId: input.checkpointId,
      parentCheckpointId: thread.headCheckpointId,
      stateVersion: 2,
      kind: "input_accepted",
      runId: input.runId,
      messageId: input.inputMessageId,
    });
    expect(created.message).toMatchObject({
      messageId: input.inputMessageId,
      position: 0,
      role: "user",
      content: "what is a tidemark?",
      runId: input.runId,
      stateVersion: 2,
      checkpointId: input.checkpointId,
      publicationStatus: "published",
    });
    expect(created.run).toMatchObject({
      status: "queued",
      attempt: 1,
      stateVersion: 2,
      baseCheckpointId: thread.headCheckpointId,
      inputMessageId: input.inputMessageId,
      input: input.input,
      cancelRequestedAt: null,
      leaseOwner: null,
    });
    expect(created.thread.stats.messageCount).toBe(1);
    expect(created.run.stats.messageCount).toBe(1);
    expect(await store.getThread(TENANT, thread.threadId)).toEqual(created.thread);
    expect(await store.listMessages(TENANT, thread.threadId)).toEqual([created.message]);
  });

  it("answers a stale expected_state_version with a conflict, even on a busy thread", async () => {
    const thread = await newThread();
    const active = await newRun(thread.threadId, { expectedStateVersion: 1 });
    const before = await snapshot(TENANT, thread.threadId, active.runId);

    const stale = expectKind(await store.createRun(runInput(thread.threadId, { expectedStateVersion: 1 })), "state_version_conflict");
    const ahead = await store.createRun(runInput(thread.threadId, { expectedStateVersion: 7 }));

    expect(stale.thread.stateVersion).toBe(2);
    expect(ahead.kind).toBe("state_version_conflict");
    expect(await snapshot(TENANT, thread.threadId, active.runId)).toEqual(before);
  });

  it("answers run_in_progress for the current version on a busy thread", async () => {
    const thread = await newThread();
    const active = await newRun(thread.threadId);

    const current = expectKind(await store.createRun(runInput(thread.threadId, { expectedStateVersion: 2 })), "run_in_progress");
    const unversioned = await store.createRun(runInput(thread.threadId));

    expect(current.thread.activeRunId).toBe(active.runId);
    expect(unversioned.kind).toBe("run_in_progress");
    expect((await store.getThread(TENANT, thread.threadId))?.stateVersion).toBe(2);
  });

  it("returns the existing run for a repeated run id or Idempotency-Key with the same request", async () => {
    const thread = await newThread();
    const input = runInput(thread.threadId, { idempotencyKey: "key-1" });
    const original = expectKind(await store.createRun(input), "created").run;

    const sameRunId = expectKind(await store.createRun({ ...input, checkpointId: createId("cp"), now: tick() }), "existing");
    const sameKey = expectKind(
      await store.createRun(runInput(thread.threadId, { idempotencyKey: "key-1", requestHash: input.requestHash })),
      "existing",
    );

    expect(sameRunId.run).toEqual(original);
    expect(sameKey.run).toEqual(original);
    expect(await store.findRunByIdempotencyKey(TENANT, "key-1")).toEqual(original);
    expect((await store.getThread(TENANT, thread.threadId))?.stateVersion).toBe(2);
  });

  it("refuses a reused run id or key with a different request", async () => {
    const thread = await newThread();
    const otherThread = await newThread();
    const input = runInput(thread.threadId, { idempotencyKey: "key-1" });
    await store.createRun(input);

    const otherBody = await store.createRun({ ...input, requestHash: "hash-other" });
    const otherKeyBody = await store.createRun(runInput(thread.threadId, { idempotencyKey: "key-1", requestHash: "hash-other" }));
    const otherThreadSameId = await store.createRun({ ...input, threadId: otherThread.threadId, idempotencyKey: null });

    expect(expectKind(otherBody, "key_reused").run.runId).toBe(input.runId);
    expect(expectKind(otherKeyBody, "key_reused").run.runId).toBe(input.runId);
    expect(expectKind(otherThreadSameId, "key_reused").run.threadId).toBe(thread.threadId);
    expect((await store.getThread(TENANT, otherThread.threadId))?.stateVersion).toBe(1);
  });

  it("answers thread_not_found for an unknown thread", async () => {
    expect((await store.createRun(runInput("thr_missing"))).kind).toBe("thread_not_found");
  });
});

describe("claimRun", () => {
  it("moves a queued run to running with a lease, once", async () => {
    const thread = await newThread();
    const run = await newRun(thread.threadId);

    const claimed = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w1", leaseExpiresAt: T0 + 99_000, now: tick() });
    const again = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w2", leaseExpiresAt: T0 + 99_000, now: tick() });

    expect(claimed).toMatchObject({ status: "running", leaseOwner: "w1", leaseExpiresAt: T0 + 99_000, startedAt: now - 1_000 });
    expect(again).toBeUndefined();
    expect((await store.getRun(TENANT, run.runId))?.leaseOwner).toBe("w1");
  });

  it("does not claim a cancelled or unknown run", async () => {
    const thread = await newThread();
    const run = await newRun(thread.threadId);
    await cancel(run);

    expect(await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w1", leaseExpiresAt: now, now: tick() })).toBeUndefined();
    expect(await store.claimRun({ tenantId: TENANT, runId: "run_missing", owner: "w1", leaseExpiresAt: now, now: tick() })).toBeUndefined();
  });

  it("claims again after the run was handed back, as the next attempt", async () => {
    const run = await runningRun();

    const handedBack = await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["running"], to: "queued", now: tick() });
    const reclaimed = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w2", leaseExpiresAt: now + 5_000, now: tick() });

    expect(handedBack).toMatchObject({ status: "queued", attempt: 2, leaseOwner: null, leaseExpiresAt: null });
    expect(reclaimed).toMatchObject({ status: "running", attempt: 2, leaseOwner: "w2", startedAt: run.startedAt });
  });
});

describe("publishMessage", () => {
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

    expect(published.run).toMatchObject({ status: "completed", leaseOwner: null, endedAt: now });
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

  it("is rejected for a queued or unknown run", async () => {
    const thread = await newThread();
    const queued = await newRun(thread.threadId);

    expect((await store.publishMessage(publishInput(queued))).kind).toBe("rejected");
    expect(expectKind(await store.publishMessage(publishInput({ ...queued, runId: "run_missing" })), "rejected").run).toBeUndefined();
  });
});

describe("requestCancel", () => {
  it("cancels a queued run at once and frees the thread", async () => {
    const thread = await newThread();
    const run = await newRun(thread.threadId);

    const accepted = expectKind(await cancel(run, "stop_before_start"), "accepted");

    expect(accepted.run).toMatchObject({
      status: "cancelled",
      cancelReason: "stop_before_start",
      cancelStateVersion: 3,
      cancelCheckpointId: accepted.checkpoint.checkpointId,
      endedAt: now,
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
      cancelRequestedAt: now,
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
});

describe("finishRun", () => {
  it("is a compare-and-set on the current status", async () => {
    const run = await runningRun();

    const wrongFrom = await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["queued"], stats: {}, now: tick() });
    const done = await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["running"], stats: {}, now: tick() });

    expect(wrongFrom).toBeUndefined();
    expect(done).toMatchObject({ status: "completed", endedAt: now, leaseOwner: null, leaseExpiresAt: null, activeOperation: null });
    expect((await store.getThread(TENANT, run.threadId))?.activeRunId).toBeNull();
  });

  it("records the failure reason and message", async () => {
    const run = await runningRun();

    const failed = await store.finishRun({
      tenantId: TENANT,
      runId: run.runId,
      to: "failed",
      from: ["running"],
      stats: {},
      failureReason: "provider_error",
      failureMessage: "The model provider failed.",
      now: tick(),
    });

    expect(failed).toMatchObject({ status: "failed", failureReason: "provider_error", failureMessage: "The model provider failed." });
  });

  it("ends as cancelled only after an accepted cancel", async () => {
    const thread = await newThread();
    const queued = await newRun(thread.threadId);

    const unaccepted = await store.finishRun({ tenantId: TENANT, runId: queued.runId, to: "cancelled", from: ["queued"], stats: {}, now: tick() });

    expect(unaccepted).toBeUndefined();
    expect((await store.getRun(TENANT, queued.runId))?.status).toBe("queued");
  });

  it("writes the cancelled generation into the cancel checkpoint once", async () => {
    const run = await runningRun();
    const { checkpoint } = expectKind(await cancel(run), "accepted");
    const generation = { discardedStreamChars: 42, discardedOutputTokens: 9, tokensEstimated: true };
    const finish = (from: RunStatus[], discardedStreamChars: number) =>
      store.finishRun({
        tenantId: TENANT,
        runId: run.runId,
        to: "cancelled",
        from,
        stats: { discardedGenerationCount: 1, discardedStreamChars },
        cancelledGeneration: { ...generation, discardedStreamChars },
        now: tick(),
      });
    const cancelCheckpoint = async () =>
      (await store.listCheckpoints(TENANT, run.threadId)).find((candidate) => candidate.checkpointId === checkpoint.checkpointId);

    expect(await finish(["running"], 1)).toBeUndefined();
    expect((await cancelCheckpoint())?.cancelledGeneration).toBeNull();

    expect((await finish(["cancel_requested", "cancelling"], 42))?.status).toBe("cancelled");
    expect((await cancelCheckpoint())?.cancelledGeneration).toEqual(generation);

    expect(await finish(["cancelled", "cancel_requested", "cancelling"], 99)).toBeUndefined();
    expect((await cancelCheckpoint())?.cancelledGeneration).toEqual(generation);
  });

  it("adds its counts to the run and the thread in the same transaction", async () => {
    const run = await runningRun();
    await cancel(run);
    const stats = { llmCallCount: 1, outputTokens: 30, discardedGenerationCount: 1, discardedStreamChars: 120, discardedOutputTokens: 30 };

    const finished = await store.finishRun({
      tenantId: TENANT,
      runId: run.runId,
      to: "cancelled",
      from: ["cancel_requested"],
      stats,
      now: tick(),
    });

    expect(finished?.stats).toMatchObject({ messageCount: 1, ...stats });
    const thread = await store.getThread(TENANT, run.threadId);
    expect(thread?.stats).toMatchObject({ messageCount: 1, ...stats });
    expect(thread?.activeRunId).toBeNull();
  });
});

describe("terminal is sticky", () => {
  const terminalRuns: Record<"completed" | "failed" | "cancelled", () => Promise<RunRecord>> = {
    completed: async () => {
      const run = await runningRun();
      return expectKind(await store.publishMessage(publishInput(run, { complete: true })), "published").run;
    },
    failed: async () => {
      const run = await runningRun();
      return (await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "failed", from: ["running"], stats: {}, now: tick() }))!;
    },
    cancelled: async () => {
      const run = await runningRun();
      await cancel(run);
      return (await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: tick() }))!;
    },
  };

  it.each(Object.keys(terminalRuns) as (keyof typeof terminalRuns)[])("nothing leaves %s", async (status) => {
    const run = await terminalRuns[status]();
    expect(run.status).toBe(status);
    const before = await snapshot(TENANT, run.threadId, run.runId);
    const everyStatus: RunStatus[] = ["queued", "running", "interrupted", "cancel_requested", "cancelling", "completed", "failed", "cancelled"];

    for (const to of ["completed", "failed", "cancelled"] as const) {
      expect(await store.finishRun({ tenantId: TENANT, runId: run.runId, to, from: everyStatus, stats: { llmCallCount: 5 }, now: tick() })).toBeUndefined();
    }
    for (const to of everyStatus) {
      expect(await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: everyStatus, to, now: tick() })).toBeUndefined();
    }
    expect(await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w9", leaseExpiresAt: now + 1, now: tick() })).toBeUndefined();
    expect((await store.publishMessage(publishInput(run))).kind).toBe("rejected");
    expect((await cancel(run)).kind).toBe("already_terminal");

    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
  });
});

describe("transitionRun", () => {
  it("moves between non-terminal statuses and records the active operation", async () => {
    const run = await runningRun();

    const interrupted = await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["running"], to: "interrupted", activeOperation: "approve:send", now: tick() });
    const resumed = await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["interrupted"], to: "running", activeOperation: null, now: tick() });
    await cancel(run);
    const cancelling = await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["cancel_requested"], to: "cancelling", activeOperation: "send_email", now: tick() });

    expect(interrupted).toMatchObject({ status: "interrupted", activeOperation: "approve:send" });
    expect(resumed).toMatchObject({ status: "running", activeOperation: null });
    expect(cancelling).toMatchObject({ status: "cancelling", activeOperation: "send_email" });
  });

  it("refuses cancel_requested and terminal targets, a wrong from and an illegal edge", async () => {
    const run = await runningRun();
    const before = await snapshot(TENANT, run.threadId, run.runId);
    const attempt = (from: RunStatus[], to: RunStatus) =>
      store.transitionRun({ tenantId: TENANT, runId: run.runId, from, to, now: tick() });

    for (const to of ["cancel_requested", "completed", "failed", "cancelled"] as const) {
      expect(await attempt(["running"], to)).toBeUndefined();
    }
    expect(await attempt(["queued"], "interrupted")).toBeUndefined();
    expect(await attempt(["running"], "cancelling")).toBeUndefined();
    expect(await attempt(["running"], "running")).toBeUndefined();

    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
  });
});

describe("tenant scoping", () => {
  it("never shows one tenant's rows to another", async () => {
    const run = await runningRun(TENANT);
    await store.appendTrace({ tenantId: TENANT, traceId: createId("trc"), runId: run.runId, threadId: run.threadId, kind: "note", data: {}, at: tick() });
    const before = await snapshot(TENANT, run.threadId, run.runId);
    const foreign = { ...run, tenantId: OTHER_TENANT };

    expect(await store.getThread(OTHER_TENANT, run.threadId)).toBeUndefined();
    expect(await store.listMessages(OTHER_TENANT, run.threadId)).toEqual([]);
    expect(await store.listCheckpoints(OTHER_TENANT, run.threadId)).toEqual([]);
    expect(await store.getRun(OTHER_TENANT, run.runId)).toBeUndefined();
    expect(await store.listActiveRuns(OTHER_TENANT, run.threadId)).toEqual([]);
    expect(await store.listTraces(OTHER_TENANT, run.runId)).toEqual([]);
    expect((await store.createRun(runInput(run.threadId, { tenantId: OTHER_TENANT }))).kind).toBe("thread_not_found");
    expect(await store.claimRun({ tenantId: OTHER_TENANT, runId: run.runId, owner: "w", leaseExpiresAt: now, now: tick() })).toBeUndefined();
    expect(await store.transitionRun({ tenantId: OTHER_TENANT, runId: run.runId, from: ["running"], to: "interrupted", now: tick() })).toBeUndefined();
    expect(expectKind(await store.publishMessage(publishInput(foreign)), "rejected").run).toBeUndefined();
    expect((await cancel(foreign)).kind).toBe("not_found");
    expect(await store.finishRun({ tenantId: OTHER_TENANT, runId: run.runId, to: "failed", from: ["running"], stats: {}, now: tick() })).toBeUndefined();
    expect(await store.deleteThread(OTHER_TENANT, run.threadId, tick())).toBe(false);
    await store.saveTitle(OTHER_TENANT, run.threadId, "stolen", tick());

    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
  });

  it("keeps the same thread id, run id and idempotency key in two tenants independent", async () => {
    const threadId = createId("thr");
    const runId = createId("run");
    await newThread(TENANT, threadId);
    await newThread(OTHER_TENANT, threadId);
    const shared = { threadId, runId, idempotencyKey: "same-key" };

    const ours = expectKind(await store.createRun(runInput(threadId, { ...shared, tenantId: TENANT })), "created");
    const theirs = expectKind(
      await store.createRun(runInput(threadId, { ...shared, tenantId: OTHER_TENANT, requestHash: "hash-other" })),
      "created",
    );
    expectKind(await cancel(ours.run), "accepted");

    expect((await store.getRun(TENANT, runId))?.status).toBe("cancelled");
    expect((await store.getRun(OTHER_TENANT, runId))?.status).toBe("queued");
    expect((await store.findRunByIdempotencyKey(OTHER_TENANT, "same-key"))?.requestHash).toBe("hash-other");
    expect((await store.getThread(TENANT, threadId))?.stateVersion).toBe(3);
    expect((await store.getThread(OTHER_TENANT, threadId))?.stateVersion).toBe(2);
    expect((await store.listMessages(OTHER_TENANT, threadId)).map((message) => message.messageId)).toEqual([theirs.message!.messageId]);
  });
});

describe("leases and recovery", () => {
  it("lists runs with an expired lease and old unclaimed queued runs, not fresh ones", async () => {
    const expired = await runningRun(TENANT, "dead-worker");
    const leased = await runningRun(TENANT, "live-worker");
    const oldQueued = await newRun((await newThread()).threadId);
    const finished = await runningRun(TENANT, "dead-worker");
    await store.finishRun({ tenantId: TENANT, runId: finished.runId, to: "completed", from: ["running"], stats: {}, now: tick() });
    now += 60_000;
    const freshQueued = await newRun((await newThread()).threadId);
    await store.renewLeases("live-worker", now + 30_000);

    const recoverable = await store.listRecoverableRuns(now, freshQueued.createdAt - 1);

    expect(recoverable.map((run) => run.runId)).toEqual([expired.runId, oldQueued.runId]);
    expect(recoverable.map((run) => run.runId)).not.toContain(leased.runId);
  });

  it("renewLeases extends only the owner's unfinished runs", async () => {
    const mine = await runningRun(TENANT, "w1");
    const alsoMine = await runningRun(OTHER_TENANT, "w1");
    const theirs = await runningRun(TENANT, "w2");
    const done = await runningRun(TENANT, "w1");
    await store.finishRun({ tenantId: TENANT, runId: done.runId, to: "failed", from: ["running"], stats: {}, now: tick() });

    expect(await store.renewLeases("w1", T0 + 999_000)).toBe(2);

    expect((await store.getRun(TENANT, mine.runId))?.leaseExpiresAt).toBe(T0 + 999_000);
    expect((await store.getRun(OTHER_TENANT, alsoMine.runId))?.leaseExpiresAt).toBe(T0 + 999_000);
    expect((await store.getRun(TENANT, theirs.runId))?.leaseExpiresAt).toBe(theirs.leaseExpiresAt);
    expect((await store.getRun(TENANT, done.runId))?.leaseExpiresAt).toBeNull();
  });

  it("releaseLease makes only the owner's run recoverable at once", async () => {
    const mine = await runningRun(TENANT, "w1");
    const theirs = await runningRun(TENANT, "w2");
    await store.releaseLease(TENANT, mine.runId, "w1");
    await store.releaseLease(TENANT, theirs.runId, "w1");
    const recoverable = await store.listRecoverableRuns(now, 0);
    expect(recoverable.map((run) => run.runId)).toEqual([mine.runId]);
    // A renewal by the owner does not bring a released lease back to life.
    await store.renewLeases("w1", now + 30_000);
    expect(await store.getRun(TENANT, mine.runId)).toMatchObject({ leaseOwner: null, leaseExpiresAt: 0 });
    expect((await store.listRecoverableRuns(now, 0)).map((run) => run.runId)).toEqual([mine.runId]);
  });
});

describe("migrations", () => {
  let dir: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "tidemark-sqlite-"));
  });

  afterEach(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("reopening a file keeps its data and applies each migration once", async () => {
    const file = path.join(dir, "tidemark.db");
    const first = createSqliteStore({ path: file });
    const thread = await first.createThread({ tenantId: TENANT, threadId: "thr_keep", checkpointId: createId("cp"), metadata: {}, now: T0 });
    await first.close();

    const second = createSqliteStore({ path: file });
    expect(await second.getThread(TENANT, "thr_keep")).toEqual(thread);
    await second.close();

    const db = new Database(file);
    try {
      expect(migrate(db)).toBe(MIGRATIONS.length);
      expect(db.prepare("SELECT version, name FROM schema_migrations ORDER BY version").all()).toEqual(
        MIGRATIONS.map(({ version, name }) => ({ version, name })),
      );
    } finally {
      db.close();
    }
  });
});
