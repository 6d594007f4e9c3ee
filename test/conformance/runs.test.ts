/**
 * The store contract for threads, run admission and claims, on every adapter: versions move by
 * exactly one per transition, a repeated request finds its run, and a claim happens once.
 */
import { describe, expect, it } from "vitest";
import { createId } from "../../src/core/index.js";
import { adapters } from "./adapters.js";
import { expectKind, StoreFixture, T0, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick, newThread, runInput, newRun, runningRun, cancel, snapshot } = fx;

describe.each(adapters)("threads ($name)", (adapter) => {
  fx.use(adapter);

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

    expect(await fx.deleteThread(TENANT, thread.threadId)).toBe(true);

    expect(await store.getThread(TENANT, thread.threadId)).toBeUndefined();
    expect(await fx.deleteThread(TENANT, thread.threadId)).toBe(false);
    expect((await store.createRun(runInput(thread.threadId))).kind).toBe("thread_not_found");
  });

  it("deleteThread cancels every run of the thread in the same transaction", async () => {
    const running = await runningRun();
    const { threadId } = running;
    const waiting = expectKind(await store.createRun(runInput(threadId, { enqueue: true })), "enqueued").run;
    const before = (await store.getThread(TENANT, threadId))!;

    const deleted = await store.deleteThread({ tenantId: TENANT, threadId, reason: "thread_terminated", createCheckpointId: () => createId("cp"), now: tick() });

    expect(deleted.kind).toBe("deleted");
    if (deleted.kind !== "deleted") return;
    expect(deleted.stopping).toEqual([]);
    expect(deleted.cancels.map((cancel) => [cancel.run.runId, cancel.run.status])).toEqual([
      [running.runId, "cancel_requested"],
      [waiting.runId, "cancelled"],
    ]);
    // One transition per accepted cancel, each on the previous one.
    expect(deleted.cancels.map((cancel) => cancel.checkpoint.stateVersion)).toEqual([before.stateVersion + 1, before.stateVersion + 2]);
    for (const cancel of deleted.cancels) expect(cancel.run).toMatchObject({ cancelReason: "thread_terminated", cancelCheckpointId: cancel.checkpoint.checkpointId });
    expect(await store.admitNextRun(TENANT, threadId, createId("cp"), tick())).toBeUndefined();
    expect((await store.createRun(runInput(threadId, { enqueue: true }))).kind).toBe("thread_not_found");
    // The worker's stop still ends the started run.
    const ended = await store.finishRun({ tenantId: TENANT, runId: running.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: tick() });
    expect(ended?.status).toBe("cancelled");
  });

  it("deleteThread leaves a run whose cancel was already accepted to stop as it is", async () => {
    const running = await runningRun();
    await cancel(running);

    const deleted = await store.deleteThread({
      tenantId: TENANT,
      threadId: running.threadId,
      reason: "thread_terminated",
      createCheckpointId: () => createId("cp"),
      now: tick(),
    });

    expect(deleted).toMatchObject({ kind: "deleted", cancels: [], stopping: [{ runId: running.runId, status: "cancel_requested", cancelReason: "user_stop" }] });
  });

  it("saveTitle keeps the first title", async () => {
    const thread = await newThread();

    await store.saveTitle(TENANT, thread.threadId, "First", tick());
    await store.saveTitle(TENANT, thread.threadId, "Second", tick());

    expect((await store.getThread(TENANT, thread.threadId))?.title).toBe("First");
  });
});

describe.each(adapters)("createRun ($name)", (adapter) => {
  fx.use(adapter);

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

  it("names the checkpoint a stale client built on, so it can branch from there", async () => {
    const thread = await newThread();
    const first = await newRun(thread.threadId);
    const builtOn = (await store.listCheckpoints(TENANT, thread.threadId)).find((checkpoint) => checkpoint.stateVersion === 1)!;
    await store.requestCancel({ tenantId: TENANT, runId: first.runId, reason: "stop", checkpointId: createId("cp"), pendingStep: null, now: tick() });

    const stale = expectKind(await store.createRun(runInput(thread.threadId, { expectedStateVersion: 1 })), "state_version_conflict");
    const unknown = expectKind(await store.createRun(runInput(thread.threadId, { expectedStateVersion: 99 })), "state_version_conflict");

    expect(stale.builtOnCheckpointId).toBe(builtOn.checkpointId);
    expect(unknown.builtOnCheckpointId).toBeNull();
  });

  it("checks a resume point in the create's own transaction: in the lineage, the head, its version", async () => {
    const thread = await newThread();
    const run = await runningRun({ threadId: thread.threadId });
    const accepted = expectKind(await cancel(run), "accepted");
    await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: tick() });
    const other = await newThread();
    const before = await snapshot(TENANT, thread.threadId, run.runId);

    const foreign = await store.createRun(runInput(thread.threadId, { resumeFromCheckpointId: other.headCheckpointId, input: null }));
    const unknown = await store.createRun(runInput(thread.threadId, { resumeFromCheckpointId: "cp_missing", input: null }));
    const stale = expectKind(
      await store.createRun(runInput(thread.threadId, { resumeFromCheckpointId: thread.headCheckpointId, input: null })),
      "state_version_conflict",
    );
    const otherVersion = expectKind(
      await store.createRun(runInput(thread.threadId, { resumeFromCheckpointId: accepted.checkpoint.checkpointId, expectedStateVersion: 2, input: null })),
      "state_version_conflict",
    );

    expect(foreign.kind).toBe("checkpoint_not_found");
    expect(unknown.kind).toBe("checkpoint_not_found");
    expect(stale.builtOnCheckpointId).toBe(thread.headCheckpointId);
    expect(otherVersion.thread.stateVersion).toBe(accepted.checkpoint.stateVersion);
    expect(await snapshot(TENANT, thread.threadId, run.runId)).toEqual(before);
    // The head resumes, building on exactly its version.
    const resumed = expectKind(
      await store.createRun(runInput(thread.threadId, { resumeFromCheckpointId: accepted.checkpoint.checkpointId, input: null })),
      "created",
    );
    expect(resumed.checkpoint).toMatchObject({ kind: "resume_accepted", stateVersion: accepted.checkpoint.stateVersion + 1 });
  });

  it("resumes a branch from its head, a checkpoint it shares with its source included", async () => {
    const source = await newThread();
    const branch = expectKind(
      await store.forkThread({
        tenantId: TENANT,
        sourceThreadId: source.threadId,
        fromCheckpointId: source.headCheckpointId,
        threadId: createId("thr"),
        checkpointId: createId("cp"),
        metadata: {},
        now: tick(),
      }),
      "forked",
    );

    const fromShared = expectKind(
      await store.createRun(runInput(branch.thread.threadId, { resumeFromCheckpointId: source.headCheckpointId, input: null })),
      "state_version_conflict",
    );
    const fromHead = await store.createRun(runInput(branch.thread.threadId, { resumeFromCheckpointId: branch.checkpoint.checkpointId }));

    expect(fromShared.builtOnCheckpointId).toBe(source.headCheckpointId);
    expect(fromHead.kind).toBe("created");
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

  it("keeps a run's instructions and metadata as given; a run without them has none", async () => {
    const thread = await newThread();
    const metadata = { ticket: "42", note: "é \u2028 ok" };
    const run = await newRun(thread.threadId, { instructions: "Answer in French.", metadata });
    expect(run).toMatchObject({ instructions: "Answer in French.", metadata });
    expect(await store.getRun(TENANT, run.runId)).toMatchObject({ instructions: "Answer in French.", metadata });
    // Waiting behind it: kept too, and still there once admitted.
    const waiting = expectKind(await store.createRun(runInput(thread.threadId, { instructions: "Be brief.", metadata: { a: "b" }, enqueue: true })), "enqueued").run;
    expect(waiting).toMatchObject({ instructions: "Be brief.", metadata: { a: "b" } });
    const plain = await newRun((await newThread()).threadId);
    expect(plain).toMatchObject({ instructions: null, metadata: {} });
    expect(await store.getRun(TENANT, plain.runId)).toMatchObject({ instructions: null, metadata: {} });
  });

  it("answers thread_not_found for an unknown thread", async () => {
    expect((await store.createRun(runInput("thr_missing"))).kind).toBe("thread_not_found");
  });
});

describe.each(adapters)("claimRun ($name)", (adapter) => {
  fx.use(adapter);

  it("moves a queued run to running with a lease, once", async () => {
    const thread = await newThread();
    const run = await newRun(thread.threadId);

    const claimed = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w1", leaseExpiresAt: T0 + 99_000, now: tick() });
    const again = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w2", leaseExpiresAt: T0 + 99_000, now: tick() });

    expect(claimed).toMatchObject({ status: "running", leaseOwner: "w1", leaseExpiresAt: T0 + 99_000, startedAt: fx.now - 1_000 });
    expect(again).toBeUndefined();
    expect((await store.getRun(TENANT, run.runId))?.leaseOwner).toBe("w1");
  });

  it("does not claim a cancelled or unknown run", async () => {
    const thread = await newThread();
    const run = await newRun(thread.threadId);
    await cancel(run);

    expect(await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w1", leaseExpiresAt: fx.now, now: tick() })).toBeUndefined();
    expect(await store.claimRun({ tenantId: TENANT, runId: "run_missing", owner: "w1", leaseExpiresAt: fx.now, now: tick() })).toBeUndefined();
  });

  it("claims again after the run was handed back, as the next attempt", async () => {
    const run = await runningRun();

    const handedBack = await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["running"], to: "queued", now: tick() });
    const reclaimed = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w2", leaseExpiresAt: fx.now + 5_000, now: tick() });

    expect(handedBack).toMatchObject({ status: "queued", attempt: 2, leaseOwner: null, leaseExpiresAt: null });
    expect(reclaimed).toMatchObject({ status: "running", attempt: 2, leaseOwner: "w2", startedAt: run.startedAt });
  });
});
