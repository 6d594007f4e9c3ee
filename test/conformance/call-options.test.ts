/**
 * The store contract for `{ signal }`, on every adapter: every method takes one last, checks it on
 * entry, and a call whose signal is already aborted rejects with its reason and touches nothing.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/store.js";
import { adapters } from "./adapters.js";
import { StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();

/** Every method but `close`, called with an aborted signal (its other arguments are never looked at). */
const CALLS: Record<Exclude<keyof Store, "close">, (store: Store, signal: AbortSignal) => unknown> = {
  createThread: (store, signal) => store.createThread({ tenantId: TENANT, threadId: "thr_a", checkpointId: "cp_a", metadata: {}, now: 1 }, { signal }),
  getThread: (store, signal) => store.getThread(TENANT, "thr_a", { signal }),
  listThreads: (store, signal) => store.listThreads(TENANT, { limit: 1, signal }),
  deleteThread: (store, signal) => store.deleteThread({ tenantId: TENANT, threadId: "thr_a", reason: "x", createCheckpointId: () => "cp_b", now: 1 }, { signal }),
  saveTitle: (store, signal) => store.saveTitle(TENANT, "thr_a", "t", 1, { signal }),
  renameThread: (store, signal) => store.renameThread(TENANT, "thr_a", "t", 1, { signal }),
  listMessages: (store, signal) => store.listMessages(TENANT, "thr_a", { signal }),
  listCheckpoints: (store, signal) => store.listCheckpoints(TENANT, "thr_a", { signal }),
  readExecutionView: (store, signal) => store.readExecutionView(TENANT, "thr_a", { checkpointsFromVersion: 0, signal }),
  forkThread: (store, signal) =>
    store.forkThread({ tenantId: TENANT, sourceThreadId: "thr_a", fromCheckpointId: "cp_a", threadId: "thr_b", checkpointId: "cp_b", metadata: {}, now: 1 }, { signal }),
  createRun: (store, signal) => store.createRun(fx.runInput("thr_a"), { signal }),
  getRun: (store, signal) => store.getRun(TENANT, "run_a", { signal }),
  findRunByIdempotencyKey: (store, signal) => store.findRunByIdempotencyKey(TENANT, "k", { signal }),
  listActiveRuns: (store, signal) => store.listActiveRuns(TENANT, "thr_a", { signal }),
  admitNextRun: (store, signal) => store.admitNextRun(TENANT, "thr_a", "cp_b", 1, { signal }),
  listThreadsWithWaitingRuns: (store, signal) => store.listThreadsWithWaitingRuns({ signal }),
  countQueuedRuns: (store, signal) => store.countQueuedRuns({ signal }),
  claimRun: (store, signal) => store.claimRun({ tenantId: TENANT, runId: "run_a", owner: "w", leaseExpiresAt: 2, now: 1 }, { signal }),
  claimQueuedRuns: (store, signal) => store.claimQueuedRuns({ owner: "w", leaseExpiresAt: 2, limit: 1, now: 1 }, { signal }),
  transitionRun: (store, signal) => store.transitionRun({ tenantId: TENANT, runId: "run_a", from: ["running"], to: "queued", now: 1 }, { signal }),
  publishMessage: (store, signal) =>
    store.publishMessage(
      { tenantId: TENANT, runId: "run_a", messageId: "msg_a", checkpointId: "cp_b", role: "assistant", content: "x", completedStepId: "s", stats: {}, complete: true, now: 1 },
      { signal },
    ),
  requestCancel: (store, signal) => store.requestCancel({ tenantId: TENANT, runId: "run_a", reason: "x", checkpointId: "cp_b", pendingStep: null, now: 1 }, { signal }),
  saveFragment: (store, signal) =>
    store.saveFragment({ tenantId: TENANT, runId: "run_a", messageId: "msg_a", checkpointId: "cp_b", content: "x", now: 1 }, { signal }),
  deleteMessage: (store, signal) => store.deleteMessage({ tenantId: TENANT, threadId: "thr_a", messageId: "msg_a", checkpointId: "cp_b", now: 1 }, { signal }),
  rollbackRun: (store, signal) => store.rollbackRun({ tenantId: TENANT, runId: "run_a", checkpointId: "cp_b", now: 1 }, { signal }),
  finishRun: (store, signal) => store.finishRun({ tenantId: TENANT, runId: "run_a", to: "failed", from: ["running"], stats: {}, now: 1 }, { signal }),
  saveSteps: (store, signal) => store.saveSteps({ tenantId: TENANT, runId: "run_a", steps: [{ stepId: "s", status: "in_progress" }] }, { signal }),
  completeStep: (store, signal) =>
    store.completeStep({ tenantId: TENANT, runId: "run_a", stepId: "s", checkpointId: "cp_b", result: "{}", now: 1 }, { signal }),
  listRunSteps: (store, signal) => store.listRunSteps(TENANT, "run_a", { signal }),
  releaseLease: (store, signal) => store.releaseLease(TENANT, "run_a", "w", { signal }),
  renewLeases: (store, signal) => store.renewLeases("w", 2, { signal }),
  takeOverLease: (store, signal) => store.takeOverLease({ tenantId: TENANT, runId: "run_a", attempt: 1, owner: "w", leaseExpiresAt: 2, now: 1 }, { signal }),
  listCancelledRuns: (store, signal) => store.listCancelledRuns("w", { signal }),
  listRecoverableRuns: (store, signal) => store.listRecoverableRuns(1, 1, { signal }),
  prepareOperation: (store, signal) =>
    store.prepareOperation(
      { tenantId: TENANT, opId: "op_a", threadId: "thr_a", runId: "run_a", toolName: "t", toolCallId: "c", idempotencyKey: "k", input: "{}", preview: null, checkpointId: "cp_b", now: 1 },
      { signal },
    ),
  beginCommit: (store, signal) => store.beginCommit({ tenantId: TENANT, opId: "op_a", runId: "run_a", now: 1 }, { signal }),
  finishOperation: (store, signal) => store.finishOperation({ tenantId: TENANT, opId: "op_a", phase: "committed", result: 1, now: 1 }, { signal }),
  abandonOperation: (store, signal) => store.abandonOperation({ tenantId: TENANT, opId: "op_a", now: 1 }, { signal }),
  markOutcomesUnknown: (store, signal) => store.markOutcomesUnknown(TENANT, "run_a", 1, { signal }),
  confirmOperation: (store, signal) =>
    store.confirmOperation({ tenantId: TENANT, threadId: "thr_a", opId: "op_a", outcome: "committed", checkpointId: "cp_b", now: 1 }, { signal }),
  getOperation: (store, signal) => store.getOperation(TENANT, "op_a", { signal }),
  listOperations: (store, signal) => store.listOperations(TENANT, "thr_a", { signal }),
  eraseThread: (store, signal) => store.eraseThread({ tenantId: TENANT, threadId: "thr_a", checkpointId: "cp_a", now: 1 }, { signal }),
  listErasableThreads: (store, signal) => store.listErasableThreads(TENANT, { signal }),
  countExpired: (store, signal) => store.countExpired("traces", 1, { signal }),
  pruneExpired: (store, signal) => store.pruneExpired({ layer: "traces", before: 1, limit: 1, createCheckpointId: () => "cp_a", now: 1 }, { signal }),
  appendTrace: (store, signal) => store.appendTrace({ tenantId: TENANT, traceId: "tr_a", runId: "run_a", threadId: "thr_a", kind: "k", data: {}, at: 1 }, { signal }),
  listTraces: (store, signal) => store.listTraces(TENANT, "run_a", { signal }),
  scanThreads: (store, signal) => store.scanThreads({ signal }),
};

describe.each(adapters)("{ signal } on every method ($name)", (adapter) => {
  fx.use(adapter);

  it.each(Object.keys(CALLS) as (keyof typeof CALLS)[])("%s rejects with an aborted signal's reason and writes nothing", async (method) => {
    const reason = new Error(`stop ${method}`);
    const before = await fx.store.listThreads(TENANT, { limit: 10 });

    await expect(Promise.resolve().then(() => CALLS[method](fx.store, AbortSignal.abort(reason)))).rejects.toBe(reason);

    expect(await fx.store.listThreads(TENANT, { limit: 10 })).toEqual(before);
    expect(await fx.store.getRun(TENANT, "run_a")).toBeUndefined();
  });
});
