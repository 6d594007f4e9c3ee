/**
 * The operation ledger on every adapter (DESIGN §6): one row per business key, every phase
 * change a compare-and-set, no commit handed over once a cancel was accepted, and an unknown
 * outcome blocking the thread until it is confirmed.
 */
import { describe, expect, it } from "vitest";
import { checkThread } from "../../src/check/index.js";
import { createId, type RunRecord } from "../../src/core/index.js";
import type { PrepareOperationInput } from "../../src/store/store.js";
import { adapters } from "./adapters.js";
import { expectKind, OTHER_TENANT, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick } = fx;

/** Creates and claims a run on `threadId` (a new thread when absent). */
async function runningRun(tenantId = TENANT, threadId?: string): Promise<RunRecord> {
  if (!threadId) {
    threadId = createId("thr");
    await store.createThread({ tenantId, threadId, checkpointId: createId("cp"), metadata: {}, now: tick() });
  }
  const runId = createId("run");
  expectKind(
    await store.createRun({
      tenantId,
      runId,
      threadId,
      input: { role: "user", content: "send the quote" },
      inputMessageId: createId("msg"),
      checkpointId: createId("cp"),
      idempotencyKey: null,
      requestHash: `hash-${runId}`,
      model: "demo",
      onDisconnect: "continue",
      recoveryPolicy: "fail",
      expectedStateVersion: null,
      now: tick(),
    }),
    "created",
  );
  const claimed = await store.claimRun({ tenantId, runId, owner: "worker-1", leaseExpiresAt: fx.now + 60_000, now: tick() });
  return claimed!;
}

function prepareInput(run: RunRecord, key = "quote:483:revision:7:send", overrides: Partial<PrepareOperationInput> = {}) {
  return {
    tenantId: run.tenantId,
    opId: createId("op"),
    threadId: run.threadId,
    runId: run.runId,
    toolName: "send_quote",
    toolCallId: `call_${createId("op")}`,
    idempotencyKey: key,
    input: JSON.stringify({ quote: 483 }),
    preview: { to: "client@example.com" },
    checkpointId: createId("cp"),
    now: tick(),
    ...overrides,
  };
}

async function prepared(run: RunRecord, key?: string) {
  return expectKind(await store.prepareOperation(prepareInput(run, key)), "prepared").operation;
}

async function committing(run: RunRecord, key?: string) {
  const operation = await prepared(run, key);
  const begun = await store.beginCommit({ tenantId: run.tenantId, opId: operation.opId, runId: run.runId, now: tick() });
  return expectKind(begun, "committing").operation;
}

/** Ends `run` by failing it, as recovery does for a lost worker. */
async function failRun(run: RunRecord) {
  return store.finishRun({
    tenantId: run.tenantId,
    runId: run.runId,
    to: "failed",
    from: ["running"],
    stats: {},
    failureReason: "worker_lost",
    now: tick(),
  });
}

async function unknownOutcome(run: RunRecord) {
  const operation = await committing(run);
  const marked = await store.markOutcomesUnknown(run.tenantId, run.runId, tick());
  expect(marked.map((op) => [op.opId, op.phase])).toEqual([[operation.opId, "outcome_unknown"]]);
  await failRun(run);
  return operation;
}

async function threadClean(run: RunRecord) {
  for await (const snapshot of store.scanThreads()) {
    if (snapshot.thread.threadId === run.threadId) expect(checkThread(snapshot)).toEqual([]);
  }
}

describe.each(adapters)("prepareOperation ($name)", (adapter) => {
  fx.use(adapter);

  it("records a prepared row and advances the thread one version with an operation_prepared checkpoint", async () => {
    const run = await runningRun();
    const before = (await store.getThread(TENANT, run.threadId))!;
    const input = prepareInput(run);
    const result = expectKind(await store.prepareOperation(input), "prepared");
    expect(result.operation).toMatchObject({
      opId: input.opId,
      threadId: run.threadId,
      runId: run.runId,
      phase: "prepared",
      preview: { to: "client@example.com" },
      result: null,
      error: null,
      commitAttempts: 0,
    });
    expect(result.thread.stateVersion).toBe(before.stateVersion + 1);
    expect(result.checkpoint).toMatchObject({
      checkpointId: input.checkpointId,
      kind: "operation_prepared",
      runId: run.runId,
      messageId: null,
      parentCheckpointId: before.headCheckpointId,
      stateVersion: before.stateVersion + 1,
    });
    expect((await store.getRun(TENANT, run.runId))!.stateVersion).toBe(before.stateVersion + 1);
    expect(await store.getOperation(TENANT, input.opId)).toEqual(result.operation);
    await threadClean(run);
  });

  it("refuses a second prepare of the same key while the first is prepared or committing, writing nothing", async () => {
    const run = await runningRun();
    const first = await prepared(run);
    const version = (await store.getThread(TENANT, run.threadId))!.stateVersion;
    const again = expectKind(await store.prepareOperation(prepareInput(run)), "refused");
    expect(again).toMatchObject({ reason: "in_progress", operation: { opId: first.opId, phase: "prepared" } });
    await store.beginCommit({ tenantId: TENANT, opId: first.opId, runId: run.runId, now: tick() });
    expect(expectKind(await store.prepareOperation(prepareInput(run)), "refused").reason).toBe("in_progress");
    expect((await store.getThread(TENANT, run.threadId))!.stateVersion).toBe(version);
    expect(await store.listOperations(TENANT, run.threadId)).toHaveLength(1);
  });

  it("returns a committed key's stored result without writing, even for another run", async () => {
    const run = await runningRun();
    const operation = await committing(run);
    await store.finishOperation({ tenantId: TENANT, opId: operation.opId, phase: "committed", result: { id: 9 }, now: tick() });
    const other = await runningRun(TENANT);
    const version = (await store.getThread(TENANT, other.threadId))!.stateVersion;
    const reused = expectKind(await store.prepareOperation(prepareInput(other)), "committed");
    expect(reused.operation).toMatchObject({ opId: operation.opId, phase: "committed", result: { id: 9 }, commitAttempts: 1 });
    expect((await store.getThread(TENANT, other.threadId))!.stateVersion).toBe(version);
  });

  it("takes an abandoned key up again with this call's run, call, input and preview", async () => {
    const run = await runningRun();
    const first = await prepared(run);
    await store.abandonOperation({ tenantId: TENANT, opId: first.opId, now: tick() });
    const input = prepareInput(run, undefined, { input: '{"quote":484}', preview: { to: "b@example.com" } });
    const again = expectKind(await store.prepareOperation(input), "prepared");
    expect(again.operation).toMatchObject({
      opId: first.opId,
      phase: "prepared",
      toolCallId: input.toolCallId,
      input: '{"quote":484}',
      preview: { to: "b@example.com" },
      commitAttempts: 0,
    });
    expect(again.checkpoint.kind).toBe("operation_prepared");
  });

  it("takes a failed key up again, and its next commit counts as this preparation's only attempt", async () => {
    const run = await runningRun();
    const operation = await committing(run);
    await store.finishOperation({ tenantId: TENANT, opId: operation.opId, phase: "failed", error: "declined", now: tick() });
    const again = expectKind(await store.prepareOperation(prepareInput(run)), "prepared").operation;
    expect(again).toMatchObject({ opId: operation.opId, phase: "prepared", error: null, commitAttempts: 0 });
    const begun = await store.beginCommit({ tenantId: TENANT, opId: again.opId, runId: run.runId, now: tick() });
    expect(expectKind(begun, "committing").operation.commitAttempts).toBe(1);
    await threadClean(run);
  });

  it("refuses a key whose outcome is unknown", async () => {
    const run = await runningRun();
    await unknownOutcome(run);
    const other = await runningRun(TENANT);
    expect(expectKind(await store.prepareOperation(prepareInput(other)), "refused").reason).toBe("outcome_unknown");
  });

  it("refuses when the run is not running (cancel accepted, unknown run, or another thread)", async () => {
    const run = await runningRun();
    const elsewhere = await runningRun(TENANT);
    const onOtherThread = prepareInput(run, "k1", { threadId: elsewhere.threadId });
    expect(expectKind(await store.prepareOperation(onOtherThread), "refused").reason).toBe("run_not_running");
    const unknown = prepareInput(run, "k2", { runId: "run_missing" });
    expect(expectKind(await store.prepareOperation(unknown), "refused").reason).toBe("run_not_running");
    await store.requestCancel({
      tenantId: TENANT,
      runId: run.runId,
      reason: "user_stop",
      checkpointId: createId("cp"),
      pendingStep: null,
      now: tick(),
    });
    const refused = expectKind(await store.prepareOperation(prepareInput(run, "k3")), "refused");
    expect(refused).toEqual({ kind: "refused", operation: undefined, reason: "run_not_running" });
    expect(await store.listOperations(TENANT, run.threadId)).toEqual([]);
  });

  it("keeps the same key in two tenants independent", async () => {
    const runA = await runningRun(TENANT);
    const runB = await runningRun(OTHER_TENANT);
    const a = await committing(runA, "shared-key");
    const b = await prepared(runB, "shared-key");
    expect(b.opId).not.toBe(a.opId);
    expect(b.phase).toBe("prepared");
    expect(await store.getOperation(OTHER_TENANT, a.opId)).toBeUndefined();
    expect(await store.getOperation(TENANT, b.opId)).toBeUndefined();
    expect(await store.listOperations(OTHER_TENANT, runA.threadId)).toEqual([]);
  });
});

describe.each(adapters)("beginCommit ($name)", (adapter) => {
  fx.use(adapter);

  it("hands a prepared operation over once: committing, one attempt, the run's active operation set", async () => {
    const run = await runningRun();
    const operation = await prepared(run);
    const begun = expectKind(
      await store.beginCommit({ tenantId: TENANT, opId: operation.opId, runId: run.runId, now: tick() }),
      "committing",
    );
    expect(begun.operation).toMatchObject({ phase: "committing", commitAttempts: 1 });
    expect((await store.getRun(TENANT, run.runId))!.activeOperation).toBe(operation.opId);
    const twice = await store.beginCommit({ tenantId: TENANT, opId: operation.opId, runId: run.runId, now: tick() });
    expect(twice).toMatchObject({ kind: "refused", runStatus: "running", operation: { phase: "committing", commitAttempts: 1 } });
  });

  it("refuses after a cancel was accepted, and the operation can then be abandoned", async () => {
    const run = await runningRun();
    const operation = await prepared(run);
    await store.requestCancel({
      tenantId: TENANT,
      runId: run.runId,
      reason: "user_stop",
      checkpointId: createId("cp"),
      pendingStep: null,
      now: tick(),
    });
    const refused = await store.beginCommit({ tenantId: TENANT, opId: operation.opId, runId: run.runId, now: tick() });
    expect(refused).toMatchObject({ kind: "refused", runStatus: "cancel_requested", operation: { phase: "prepared" } });
    expect((await store.getRun(TENANT, run.runId))!.activeOperation).toBeNull();
    const abandoned = await store.abandonOperation({ tenantId: TENANT, opId: operation.opId, now: tick() });
    expect(abandoned).toMatchObject({ phase: "abandoned", commitAttempts: 0 });
    expect(await store.abandonOperation({ tenantId: TENANT, opId: operation.opId, now: tick() })).toBeUndefined();
  });

  it("is fenced by attempt: never hands an action over for a run another worker took", async () => {
    const run = await runningRun();
    const operation = await prepared(run);
    await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["running"], to: "queued", now: tick() });
    const taken = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "worker-2", leaseExpiresAt: fx.now + 60_000, now: tick() });
    expect(taken?.attempt).toBe(run.attempt + 1);
    const stale = await store.beginCommit({ tenantId: TENANT, opId: operation.opId, runId: run.runId, attempt: run.attempt, now: tick() });
    expect(stale).toMatchObject({ kind: "refused", runStatus: "running", operation: { phase: "prepared", commitAttempts: 0 } });
    expect((await store.getRun(TENANT, run.runId))!.activeOperation).toBeNull();
  });

  it("refuses a run that did not prepare the operation, and an unknown operation", async () => {
    const run = await runningRun();
    const operation = await prepared(run);
    const other = await runningRun(TENANT);
    const foreign = await store.beginCommit({ tenantId: TENANT, opId: operation.opId, runId: other.runId, now: tick() });
    expect(foreign).toMatchObject({ kind: "refused", runStatus: "running" });
    expect(await store.beginCommit({ tenantId: TENANT, opId: "op_missing", runId: run.runId, now: tick() })).toEqual({
      kind: "refused",
      operation: undefined,
      runStatus: "running",
    });
    const otherTenant = await store.beginCommit({ tenantId: OTHER_TENANT, opId: operation.opId, runId: run.runId, now: tick() });
    expect(otherTenant).toEqual({ kind: "refused", operation: undefined, runStatus: undefined });
    expect((await store.getOperation(TENANT, operation.opId))!.phase).toBe("prepared");
  });
});

describe.each(adapters)("finishOperation and abandonOperation ($name)", (adapter) => {
  fx.use(adapter);

  it("committing → committed once, clearing the run's active operation; the second finish changes nothing", async () => {
    const run = await runningRun();
    const operation = await committing(run);
    const done = await store.finishOperation({ tenantId: TENANT, opId: operation.opId, phase: "committed", result: { id: 1 }, now: tick() });
    expect(done).toMatchObject({ phase: "committed", result: { id: 1 }, error: null, commitAttempts: 1 });
    expect((await store.getRun(TENANT, run.runId))!.activeOperation).toBeNull();
    const late = await store.finishOperation({ tenantId: TENANT, opId: operation.opId, phase: "failed", error: "late", now: tick() });
    expect(late).toBeUndefined();
    expect(await store.getOperation(TENANT, operation.opId)).toEqual(done);
  });

  it("committing → failed keeps the safe error and no result", async () => {
    const run = await runningRun();
    const operation = await committing(run);
    const failed = await store.finishOperation({ tenantId: TENANT, opId: operation.opId, phase: "failed", error: "declined", now: tick() });
    expect(failed).toMatchObject({ phase: "failed", result: null, error: "declined" });
  });

  it("does not finish a prepared operation, nor abandon a committing one", async () => {
    const run = await runningRun();
    const operation = await prepared(run);
    expect(await store.finishOperation({ tenantId: TENANT, opId: operation.opId, phase: "committed", now: tick() })).toBeUndefined();
    await store.beginCommit({ tenantId: TENANT, opId: operation.opId, runId: run.runId, now: tick() });
    expect(await store.abandonOperation({ tenantId: TENANT, opId: operation.opId, now: tick() })).toBeUndefined();
    expect((await store.getOperation(TENANT, operation.opId))!.phase).toBe("committing");
  });

  it("leaves the run's active operation alone when it names another one", async () => {
    const run = await runningRun();
    const first = await committing(run, "k1");
    const second = await committing(run, "k2");
    expect((await store.getRun(TENANT, run.runId))!.activeOperation).toBe(second.opId);
    await store.finishOperation({ tenantId: TENANT, opId: first.opId, phase: "committed", now: tick() });
    expect((await store.getRun(TENANT, run.runId))!.activeOperation).toBe(second.opId);
  });
});

describe.each(adapters)("markOutcomesUnknown and confirmOperation ($name)", (adapter) => {
  fx.use(adapter);

  it("marks only the run's committing operations", async () => {
    const run = await runningRun();
    const inFlight = await committing(run, "k1");
    const waiting = await prepared(run, "k2");
    const other = await runningRun(TENANT);
    const othersInFlight = await committing(other, "k3");
    const marked = await store.markOutcomesUnknown(TENANT, run.runId, tick());
    expect(marked.map((op) => op.opId)).toEqual([inFlight.opId]);
    expect((await store.getOperation(TENANT, waiting.opId))!.phase).toBe("prepared");
    expect((await store.getOperation(TENANT, othersInFlight.opId))!.phase).toBe("committing");
    expect(await store.markOutcomesUnknown(TENANT, run.runId, tick())).toEqual([]);
    expect(await store.markOutcomesUnknown(OTHER_TENANT, other.runId, tick())).toEqual([]);
  });

  it("refuses a new run while an outcome is unknown, and allows it once confirmed committed", async () => {
    const run = await runningRun();
    const operation = await unknownOutcome(run);
    const attempt = async () =>
      store.createRun({
        tenantId: TENANT,
        runId: createId("run"),
        threadId: run.threadId,
        input: { role: "user", content: "again" },
        inputMessageId: createId("msg"),
        checkpointId: createId("cp"),
        idempotencyKey: null,
        requestHash: "hash-again",
        model: "demo",
        onDisconnect: "continue",
        recoveryPolicy: "fail",
        expectedStateVersion: null,
        now: tick(),
      });
    const blocked = expectKind(await attempt(), "operation_unconfirmed");
    expect(blocked.operations.map((op) => [op.opId, op.phase])).toEqual([[operation.opId, "outcome_unknown"]]);

    const before = (await store.getThread(TENANT, run.threadId))!;
    const checkpointId = createId("cp");
    const confirmed = await store.confirmOperation({
      tenantId: TENANT,
      threadId: run.threadId,
      opId: operation.opId,
      outcome: "committed",
      result: { id: 7 },
      checkpointId,
      now: tick(),
    });
    expect(confirmed).toMatchObject({ phase: "committed", result: { id: 7 }, commitAttempts: 1 });
    const after = (await store.getThread(TENANT, run.threadId))!;
    expect(after).toMatchObject({ stateVersion: before.stateVersion + 1, headCheckpointId: checkpointId });
    const head = (await store.listCheckpoints(TENANT, run.threadId)).at(-1)!;
    expect(head).toMatchObject({ checkpointId, kind: "operation_confirmed", runId: null, messageId: null });

    const again = await store.confirmOperation({
      tenantId: TENANT,
      threadId: run.threadId,
      opId: operation.opId,
      outcome: "not_committed",
      checkpointId: createId("cp"),
      now: tick(),
    });
    expect(again).toBeUndefined();
    expect((await store.getThread(TENANT, run.threadId))!.stateVersion).toBe(after.stateVersion);
    expectKind(await attempt(), "created");
    await threadClean(run);
  });

  it("confirms not_committed as abandoned, so the key can be prepared again", async () => {
    const run = await runningRun();
    const operation = await unknownOutcome(run);
    const confirmed = await store.confirmOperation({
      tenantId: TENANT,
      threadId: run.threadId,
      opId: operation.opId,
      outcome: "not_committed",
      result: { ignored: true },
      checkpointId: createId("cp"),
      now: tick(),
    });
    expect(confirmed).toMatchObject({ phase: "abandoned", result: null });
    const next = await runningRun(TENANT, run.threadId);
    const again = expectKind(await store.prepareOperation(prepareInput(next)), "prepared").operation;
    expect(again).toMatchObject({ opId: operation.opId, runId: next.runId, phase: "prepared", commitAttempts: 0 });
    await threadClean(run);
  });

  it("refuses to confirm from another thread or tenant, or an operation whose outcome is known", async () => {
    const run = await runningRun();
    const operation = await unknownOutcome(run);
    const other = await runningRun(TENANT);
    const base = { opId: operation.opId, outcome: "committed" as const, checkpointId: createId("cp"), now: tick() };
    expect(await store.confirmOperation({ ...base, tenantId: TENANT, threadId: other.threadId })).toBeUndefined();
    expect(await store.confirmOperation({ ...base, tenantId: OTHER_TENANT, threadId: run.threadId })).toBeUndefined();
    const live = await committing(other, "k-live");
    expect(
      await store.confirmOperation({ ...base, tenantId: TENANT, threadId: other.threadId, opId: live.opId }),
    ).toBeUndefined();
    expect((await store.getOperation(TENANT, operation.opId))!.phase).toBe("outcome_unknown");
  });
});

describe.each(adapters)("listOperations and scanThreads ($name)", (adapter) => {
  fx.use(adapter);

  it("lists a thread's operations oldest first, and scanThreads carries them", async () => {
    const run = await runningRun();
    const first = await prepared(run, "k1");
    const second = await prepared(run, "k2");
    expect((await store.listOperations(TENANT, run.threadId)).map((op) => op.opId)).toEqual([first.opId, second.opId]);
    const snapshots = [];
    for await (const snapshot of store.scanThreads()) snapshots.push(snapshot);
    expect(snapshots).toHaveLength(1);
    expect(snapshots[0]!.operations.map((op) => op.opId)).toEqual([first.opId, second.opId]);
  });
});
