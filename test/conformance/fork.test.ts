/**
 * Fork on every adapter (DESIGN §9): a branch shares its parent's history up to a checkpoint
 * without copying it, reads through the fork point, and continues on its own.
 */
import { describe, expect, it } from "vitest";
import { createId, type RunRecord, type ThreadRecord } from "../../src/core/index.js";
import { checkStore } from "../../src/check/index.js";
import type { ForkThreadInput } from "../../src/store/store.js";
import { adapters } from "./adapters.js";
import { OTHER_TENANT, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick } = fx;

async function newThread(tenantId = TENANT): Promise<ThreadRecord> {
  return store.createThread({ tenantId, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: tick() });
}

/** A claimed (running) run on `threadId`. */
async function running(threadId: string, text: string, tenantId = TENANT): Promise<RunRecord> {
  const created = await store.createRun({
    tenantId,
    runId: createId("run"),
    threadId,
    input: { role: "user", content: text },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: `hash-${text}`,
    model: "demo",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    now: tick(),
  });
  if (created.kind !== "created") throw new Error(`run not created: ${created.kind}`);
  const claimed = await store.claimRun({ tenantId, runId: created.run.runId, owner: "w", leaseExpiresAt: fx.now + 60_000, now: tick() });
  return claimed!;
}

/** One completed turn on `threadId`: the user's input and the assistant's answer. Returns the run. */
async function turn(threadId: string, text: string, tenantId = TENANT): Promise<RunRecord> {
  const run = await running(threadId, text, tenantId);
  const published = await store.publishMessage({
    tenantId,
    runId: run.runId,
    messageId: createId("msg"),
    checkpointId: createId("cp"),
    role: "assistant",
    content: `re: ${text}`,
    completedStepId: "step-1",
    stats: { llmCallCount: 1 },
    complete: true,
    now: tick(),
  });
  if (published.kind !== "published") throw new Error("not published");
  return published.run;
}

async function fork(sourceThreadId: string, fromCheckpointId: string, overrides: Partial<ForkThreadInput> = {}) {
  return store.forkThread({
    tenantId: TENANT,
    sourceThreadId,
    fromCheckpointId,
    threadId: createId("thr"),
    checkpointId: createId("cp"),
    metadata: {},
    now: tick(),
    ...overrides,
  });
}

async function forked(sourceThreadId: string, fromCheckpointId: string): Promise<ThreadRecord> {
  const result = await fork(sourceThreadId, fromCheckpointId);
  if (result.kind !== "forked") throw new Error(`not forked: ${result.kind}`);
  return result.thread;
}

const contents = async (threadId: string, limit?: number) =>
  (await store.listMessages(TENANT, threadId, limit === undefined ? {} : { limit })).map((message) => message.content);

describe.each(adapters)("forkThread ($name)", (adapter) => {
  fx.use(adapter);

  // Needs a second connection to the same database, which SQLite's in-memory store has not:
  // src/store/sqlite/sqlite-store.test.ts checks SQLite on a file.
  it.skipIf(!adapter.countRows)("writes two rows whatever the prefix's length", async () => {
    const written: number[] = [];
    for (const turns of [1, 40]) {
      const source = await newThread();
      for (let index = 0; index < turns; index++) await turn(source.threadId, `q${index}`);
      const head = (await store.getThread(TENANT, source.threadId))!.headCheckpointId;
      const before = await adapter.countRows!(fx.current);
      await forked(source.threadId, head);
      written.push((await adapter.countRows!(fx.current)) - before);
    }
    expect(written).toEqual([2, 2]);
  });

  it("starts a branch at the fork version + 1, idle, with zero stats and a fork_created checkpoint", async () => {
    const source = await newThread();
    await turn(source.threadId, "a");
    const head = (await store.getThread(TENANT, source.threadId))!;

    const result = await fork(source.threadId, head.headCheckpointId, { metadata: { label: "try b", forked_from: "spoofed" } });

    expect(result.kind).toBe("forked");
    if (result.kind !== "forked") return;
    expect(result.thread).toMatchObject({
      stateVersion: head.stateVersion + 1,
      headCheckpointId: result.checkpoint.checkpointId,
      activeRunId: null,
      stats: { messageCount: 0, llmCallCount: 0 },
      forkedFrom: { threadId: source.threadId, checkpointId: head.headCheckpointId, stateVersion: head.stateVersion },
      metadata: { label: "try b", forked_from: { thread_id: source.threadId, checkpoint_id: head.headCheckpointId } },
    });
    expect(result.checkpoint).toMatchObject({
      kind: "fork_created",
      parentCheckpointId: head.headCheckpointId,
      stateVersion: head.stateVersion + 1,
      threadId: result.thread.threadId,
    });
  });

  it("reads history and checkpoints through the fork point, and both branches continue independently", async () => {
    const source = await newThread();
    await turn(source.threadId, "a");
    const forkPoint = (await store.getThread(TENANT, source.threadId))!;
    const branch = await forked(source.threadId, forkPoint.headCheckpointId);

    await turn(source.threadId, "source-b");
    await turn(branch.threadId, "branch-b");

    expect(await contents(source.threadId)).toEqual(["a", "re: a", "source-b", "re: source-b"]);
    expect(await contents(branch.threadId)).toEqual(["a", "re: a", "branch-b", "re: branch-b"]);
    const positions = (await store.listMessages(TENANT, branch.threadId)).map((message) => message.position);
    expect(positions).toEqual([0, 1, 2, 3]);

    const checkpoints = await store.listCheckpoints(TENANT, branch.threadId);
    expect(checkpoints.map((checkpoint) => checkpoint.stateVersion)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(checkpoints.map((checkpoint) => checkpoint.kind)).toEqual([
      "thread_created",
      "input_accepted",
      "message_published",
      "fork_created",
      "input_accepted",
      "message_published",
    ]);
    // Parents chain through the fork point.
    for (const [index, checkpoint] of checkpoints.entries()) {
      expect(checkpoint.parentCheckpointId).toBe(index === 0 ? null : checkpoints[index - 1]!.checkpointId);
    }
    const branchThread = (await store.getThread(TENANT, branch.threadId))!;
    expect(branchThread.stats).toMatchObject({ messageCount: 2, llmCallCount: 1 });
    expect((await store.getThread(TENANT, source.threadId))!.stats).toMatchObject({ messageCount: 4, llmCallCount: 2 });
    expect((await checkStore(store)).violations).toEqual([]);
  });

  it("forks from an older checkpoint: the prefix ends there, later messages of the source are not shared", async () => {
    const source = await newThread();
    await turn(source.threadId, "a");
    const older = (await store.getThread(TENANT, source.threadId))!;
    await turn(source.threadId, "b");
    await turn(source.threadId, "c");

    const branch = await forked(source.threadId, older.headCheckpointId);
    await turn(branch.threadId, "x");

    expect(await contents(branch.threadId)).toEqual(["a", "re: a", "x", "re: x"]);
    expect((await store.listCheckpoints(TENANT, branch.threadId)).map((checkpoint) => checkpoint.stateVersion)).toEqual([
      1, 2, 3, 4, 5, 6,
    ]);
    expect(await contents(source.threadId)).toEqual(["a", "re: a", "b", "re: b", "c", "re: c"]);
    expect((await checkStore(store)).violations).toEqual([]);
  });

  it("forks a fork, also from a checkpoint the branch inherited", async () => {
    const root = await newThread();
    await turn(root.threadId, "a");
    const rootPoint = (await store.getThread(TENANT, root.threadId))!;
    await turn(root.threadId, "root-only");
    const first = await forked(root.threadId, rootPoint.headCheckpointId);
    await turn(first.threadId, "b");
    const firstPoint = (await store.getThread(TENANT, first.threadId))!;
    await turn(first.threadId, "first-only");

    const second = await forked(first.threadId, firstPoint.headCheckpointId);
    await turn(second.threadId, "c");
    expect(await contents(second.threadId)).toEqual(["a", "re: a", "b", "re: b", "c", "re: c"]);
    expect(await contents(second.threadId, 3)).toEqual(["re: b", "c", "re: c"]);
    const versions = (await store.listCheckpoints(TENANT, second.threadId)).map((checkpoint) => checkpoint.stateVersion);
    expect(versions).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);

    // The root's checkpoint, reached through the first branch: the new branch hangs off the root.
    const inherited = (await store.listCheckpoints(TENANT, first.threadId))[1]!;
    const third = await forked(first.threadId, inherited.checkpointId);
    expect(third.forkedFrom).toMatchObject({ threadId: root.threadId, checkpointId: inherited.checkpointId, stateVersion: 2 });
    expect(await contents(third.threadId)).toEqual(["a"]);
    expect((await checkStore(store)).violations).toEqual([]);
  });

  it("pages the last messages across the fork point", async () => {
    const source = await newThread();
    for (const text of ["a", "b", "c"]) await turn(source.threadId, text);
    const branch = await forked(source.threadId, (await store.getThread(TENANT, source.threadId))!.headCheckpointId);
    await turn(branch.threadId, "d");

    expect(await contents(branch.threadId, 1)).toEqual(["re: d"]);
    expect(await contents(branch.threadId, 3)).toEqual(["re: c", "d", "re: d"]);
    expect(await contents(branch.threadId, 100)).toEqual(await contents(branch.threadId));
    expect((await store.listCheckpoints(TENANT, branch.threadId, { fromVersion: 7 })).map((c) => c.stateVersion)).toEqual([
      7, 8, 9, 10,
    ]);
  });

  it("answers not found for an unknown or foreign source, and a checkpoint outside the lineage", async () => {
    const source = await newThread();
    await turn(source.threadId, "a");
    const later = (await store.getThread(TENANT, source.threadId))!.headCheckpointId;
    const older = (await store.listCheckpoints(TENANT, source.threadId))[1]!;
    const branch = await forked(source.threadId, older.checkpointId);
    const unrelated = await newThread();
    const foreign = await store.createThread({
      tenantId: OTHER_TENANT,
      threadId: createId("thr"),
      checkpointId: createId("cp"),
      metadata: {},
      now: tick(),
    });

    expect((await fork("thr_unknown", later)).kind).toBe("thread_not_found");
    expect((await fork(foreign.threadId, foreign.headCheckpointId)).kind).toBe("thread_not_found");
    expect((await fork(source.threadId, "cp_unknown")).kind).toBe("checkpoint_not_found");
    expect((await fork(source.threadId, unrelated.headCheckpointId)).kind).toBe("checkpoint_not_found");
    // The source's checkpoint after the fork point is not in the branch's lineage.
    expect((await fork(branch.threadId, later)).kind).toBe("checkpoint_not_found");
    // Another tenant cannot fork this tenant's thread, nor read its branch.
    expect((await fork(source.threadId, later, { tenantId: OTHER_TENANT })).kind).toBe("thread_not_found");
    expect(await store.listMessages(OTHER_TENANT, branch.threadId)).toEqual([]);
    expect(await store.listCheckpoints(OTHER_TENANT, branch.threadId)).toEqual([]);
    await fx.deleteThread(TENANT, source.threadId);
    expect((await fork(source.threadId, later)).kind).toBe("thread_not_found");
    // A branch of a deleted thread still reads its prefix.
    expect(await contents(branch.threadId)).toEqual(["a"]);
  });

  it("keeps a shared fragment as the branch saw it when the source deletes it, and lets the branch delete its own view", async () => {
    const source = await newThread();
    const run = await turn(source.threadId, "a");
    const saved = await store.saveFragment({
      tenantId: TENANT,
      runId: run.runId,
      messageId: createId("msg"),
      checkpointId: createId("cp"),
      content: "partial",
      now: tick(),
    });
    if (saved.kind !== "saved") throw new Error(saved.kind);
    const branch = await forked(source.threadId, saved.checkpoint.checkpointId);
    const other = await forked(source.threadId, saved.checkpoint.checkpointId);
    const remove = (threadId: string) =>
      store.deleteMessage({ tenantId: TENANT, threadId, messageId: saved.message.messageId, checkpointId: createId("cp"), now: tick() });
    const statusIn = async (threadId: string) =>
      (await store.listMessages(TENANT, threadId)).find((message) => message.messageId === saved.message.messageId)?.publicationStatus;

    expect((await remove(source.threadId)).kind).toBe("deleted");
    expect(await statusIn(source.threadId)).toBe("deleted");
    expect(await statusIn(branch.threadId)).toBe("fragment");

    expect((await remove(branch.threadId)).kind).toBe("deleted");
    expect(await statusIn(branch.threadId)).toBe("deleted");
    expect(await statusIn(other.threadId)).toBe("fragment");
    expect((await remove(branch.threadId)).kind).toBe("message_not_found");
    expect((await checkStore(store)).violations).toEqual([]);
  });

  it("lists the operations of the runs in the shared prefix on the branch, not those of the source's later runs", async () => {
    const source = await newThread();
    const prepare = async (run: RunRecord, key: string) => {
      const result = await store.prepareOperation({
        tenantId: TENANT,
        opId: createId("op"),
        threadId: run.threadId,
        runId: run.runId,
        toolName: "send_quote",
        toolCallId: `call_${key}`,
        idempotencyKey: key,
        input: "{}",
        preview: null,
        checkpointId: createId("cp"),
        now: tick(),
      });
      if (result.kind !== "prepared") throw new Error(result.kind);
      await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["running"], stats: {}, now: tick() });
      return result.operation.opId;
    };
    const shared = await prepare(await running(source.threadId, "a"), "quote:1:send");
    const branch = await forked(source.threadId, (await store.getThread(TENANT, source.threadId))!.headCheckpointId);
    const later = await prepare(await running(source.threadId, "b"), "quote:2:send");
    const own = await prepare(await running(branch.threadId, "c"), "quote:3:send");

    const ids = async (threadId: string) => (await store.listOperations(TENANT, threadId)).map((operation) => operation.opId);
    expect(await ids(branch.threadId)).toEqual([shared, own]);
    expect(await ids(source.threadId)).toEqual([shared, later]);
    expect((await checkStore(store)).violations).toEqual([]);
  });

  it("reads an execution's view through the fork point: the three lists as they are read one by one, in one transaction", async () => {
    const source = await newThread();
    await turn(source.threadId, "a");
    await turn(source.threadId, "b");
    const branch = await forked(source.threadId, (await store.getThread(TENANT, source.threadId))!.headCheckpointId);
    await turn(branch.threadId, "c");
    for (const threadId of [source.threadId, branch.threadId]) {
      const fromVersion = 3;
      const view = await store.readExecutionView(TENANT, threadId, { checkpointsFromVersion: fromVersion });
      expect(view).toEqual({
        messages: await store.listMessages(TENANT, threadId),
        operations: await store.listOperations(TENANT, threadId),
        checkpoints: await store.listCheckpoints(TENANT, threadId, { fromVersion }),
      });
      expect(view.messages.length).toBeGreaterThan(0);
      expect(view.checkpoints.every((checkpoint) => checkpoint.stateVersion >= fromVersion)).toBe(true);
    }
    expect(await store.readExecutionView(TENANT, createId("thr"), { checkpointsFromVersion: 0 })).toEqual({ messages: [], operations: [], checkpoints: [] });
  });
});
