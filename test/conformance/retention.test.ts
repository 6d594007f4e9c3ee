/**
 * Retention per layer on every adapter, on fake time (docs/data/lifetimes.md): each layer is kept
 * for exactly its setting and pruned just after it, by the pruner the server runs; what a layer's
 * expiry leaves (a run's status and stats, a reduced operation's outcome, the fragment's delete
 * as a transition) is what the contract says, and `tidemark check` stays clean throughout.
 */
import { describe, expect, it } from "vitest";
import { createId, silentLogger, systemTimers, type RetentionSettings, type RunRecord } from "../../src/core/index.js";
import { RetentionPruner } from "../../src/runtime/retention-pruner.js";
import { adapters } from "./adapters.js";
import { expectKind, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick } = fx;

/** The retention under test: one layer kept for `ttlMs`, every other for ever. */
const TTL_MS = 7 * 86_400_000;
const FOREVER: RetentionSettings = {
  traceTtlMs: Number.POSITIVE_INFINITY,
  runDetailTtlMs: Number.POSITIVE_INFINITY,
  fragmentTtlMs: Number.POSITIVE_INFINITY,
  operationTtlMs: Number.POSITIVE_INFINITY,
};

/** A pruner on the fixture's clock, with small batches so a sweep takes several. */
const pruner = (settings: Partial<RetentionSettings>) =>
  new RetentionPruner({ store, clock: { now: () => fx.now }, timers: systemTimers, logger: silentLogger, settings: { ...FOREVER, ...settings }, batchSize: 2 });

/** Sets the clock to `at` and sweeps once. */
async function pruneAt(settings: Partial<RetentionSettings>, at: number) {
  fx.now = at;
  return pruner(settings).pruneOnce();
}

/** A run stopped by the user: cancel accepted, then the worker confirmed it. */
async function stoppedRun(threadId?: string): Promise<RunRecord> {
  const run = await fx.runningRun({ threadId });
  expectKind(await fx.cancel(run), "accepted");
  return (await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: { llmCallCount: 1 }, now: tick() }))!;
}

describe.each(adapters)("retention per layer ($name)", (adapter) => {
  fx.use(adapter);

  it("traces: kept for exactly their setting, then deleted, a batch at a time", async () => {
    const run = await fx.runningRun();
    const written = tick();
    for (let index = 0; index < 5; index++) {
      await store.appendTrace({ tenantId: TENANT, traceId: createId("run"), runId: run.runId, threadId: run.threadId, kind: "k", data: { index }, at: written });
    }
    const fresh = written + 1_000;
    await store.appendTrace({ tenantId: TENANT, traceId: createId("run"), runId: run.runId, threadId: run.threadId, kind: "k", data: { fresh: true }, at: fresh });

    expect(await pruneAt({ traceTtlMs: TTL_MS }, written + TTL_MS)).toMatchObject({ traces: 0 });
    expect(await store.listTraces(TENANT, run.runId)).toHaveLength(6);
    expect(await store.countExpired("traces", written + 1)).toBe(5);

    expect(await pruneAt({ traceTtlMs: TTL_MS }, written + TTL_MS + 1)).toEqual({ traces: 5, run_detail: 0, fragments: 0, operations: 0 });
    expect((await store.listTraces(TENANT, run.runId)).map((trace) => trace.data)).toEqual([{ fresh: true }]);
    await fx.expectClean();
  });

  it("run detail: a finished run's steps and instructions expire after its end; its status, stats and transitions stay", async () => {
    const run = await fx.runningRun();
    await store.saveSteps({ tenantId: TENANT, runId: run.runId, steps: [{ stepId: "a", status: "in_progress", ordinal: 0, title: "the secret plan" }] });
    const live = await fx.runningRun();
    expectKind(await fx.cancel(run), "accepted");
    const ended = (await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: { llmCallCount: 2 }, now: tick() }))!;
    const endedAt = ended.endedAt!;

    expect(await pruneAt({ runDetailTtlMs: TTL_MS }, endedAt + TTL_MS)).toMatchObject({ run_detail: 0 });
    expect(await store.listRunSteps(TENANT, run.runId)).toHaveLength(1);

    expect(await pruneAt({ runDetailTtlMs: TTL_MS }, endedAt + TTL_MS + 1)).toMatchObject({ run_detail: 1 });
    expect(await store.listRunSteps(TENANT, run.runId)).toEqual([]);
    const kept = (await store.getRun(TENANT, run.runId))!;
    expect(kept).toMatchObject({ status: "cancelled", stats: ended.stats, endedAt, detailExpiredAt: endedAt + TTL_MS + 1, instructions: null, config: null });
    // A run that has not ended keeps everything, however old.
    expect((await store.getRun(TENANT, live.runId))!.detailExpiredAt).toBeNull();
    expect(await pruneAt({ runDetailTtlMs: TTL_MS }, endedAt + 2 * TTL_MS)).toMatchObject({ run_detail: 0 });
    await fx.expectClean();
  });

  it("fragments: a saved fragment leaves its thread after its setting as a delete would (a new version), its text cleared", async () => {
    const run = await stoppedRun();
    const messageId = createId("msg");
    const saved = expectKind(
      await store.saveFragment({ tenantId: TENANT, runId: run.runId, messageId, checkpointId: createId("cp"), content: "what the user saw", now: tick() }),
      "saved",
    );
    const savedAt = saved.message.createdAt;

    expect(await pruneAt({ fragmentTtlMs: TTL_MS }, savedAt + TTL_MS)).toMatchObject({ fragments: 0 });
    expect((await store.listMessages(TENANT, run.threadId)).at(-1)).toMatchObject({ messageId, publicationStatus: "fragment" });

    expect(await pruneAt({ fragmentTtlMs: TTL_MS }, savedAt + TTL_MS + 1)).toMatchObject({ fragments: 1 });
    expect((await store.listMessages(TENANT, run.threadId)).at(-1)).toMatchObject({ messageId, publicationStatus: "deleted", content: "" });
    const thread = (await store.getThread(TENANT, run.threadId))!;
    expect(thread.stateVersion).toBe(saved.thread.stateVersion + 1);
    expect((await store.listCheckpoints(TENANT, run.threadId)).at(-1)).toMatchObject({ kind: "message_deleted", messageId });
    await fx.expectClean();
  });

  it("fragments: one on a thread whose run is active waits for a later sweep; a deleted fragment's text is cleared without a new version", async () => {
    const run = await stoppedRun();
    const busyId = createId("msg");
    expectKind(await store.saveFragment({ tenantId: TENANT, runId: run.runId, messageId: busyId, checkpointId: createId("cp"), content: "busy", now: tick() }), "saved");
    const other = await stoppedRun();
    const deletedId = createId("msg");
    expectKind(await store.saveFragment({ tenantId: TENANT, runId: other.runId, messageId: deletedId, checkpointId: createId("cp"), content: "gone", now: tick() }), "saved");
    expectKind(await store.deleteMessage({ tenantId: TENANT, threadId: other.threadId, messageId: deletedId, checkpointId: createId("cp"), now: tick() }), "deleted");
    const otherVersion = (await store.getThread(TENANT, other.threadId))!.stateVersion;
    const active = await fx.runningRun({ threadId: run.threadId });

    expect(await pruneAt({ fragmentTtlMs: TTL_MS }, fx.now + TTL_MS + 1)).toMatchObject({ fragments: 1 });
    expect((await store.listMessages(TENANT, other.threadId)).at(-1)).toMatchObject({ messageId: deletedId, publicationStatus: "deleted", content: "" });
    expect((await store.getThread(TENANT, other.threadId))!.stateVersion).toBe(otherVersion);
    expect((await store.listMessages(TENANT, run.threadId)).find((message) => message.messageId === busyId)).toMatchObject({ publicationStatus: "fragment" });

    expectKind(await fx.cancel(active), "accepted");
    await store.finishRun({ tenantId: TENANT, runId: active.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: tick() });
    expect(await pruneAt({ fragmentTtlMs: TTL_MS }, fx.now)).toMatchObject({ fragments: 1 });
    expect((await store.listMessages(TENANT, run.threadId)).find((message) => message.messageId === busyId)).toMatchObject({ publicationStatus: "deleted", content: "" });
    await fx.expectClean();
  });

  it("operations: reduced after their setting, never deleted; a retry still finds the outcome, and a failed key may be prepared again", async () => {
    const run = await fx.runningRun();
    const prepare = (key: string, on: RunRecord) =>
      store.prepareOperation({
        tenantId: TENANT,
        opId: createId("op"),
        threadId: on.threadId,
        runId: on.runId,
        toolName: "send_quote",
        toolCallId: `call_${createId("op")}`,
        idempotencyKey: key,
        input: JSON.stringify({ to: "ada@example.com" }),
        preview: { to: "ada@example.com" },
        checkpointId: createId("cp"),
        now: tick(),
      });
    const commit = async (key: string, phase: "committed" | "failed") => {
      const { operation } = expectKind(await prepare(key, run), "prepared");
      expectKind(await store.beginCommit({ tenantId: TENANT, opId: operation.opId, runId: run.runId, now: tick() }), "committing");
      return (await store.finishOperation({ tenantId: TENANT, opId: operation.opId, phase, result: phase === "committed" ? ["sent"] : undefined, error: phase === "failed" ? "refused by ada@example.com" : undefined, now: tick() }))!;
    };
    const sent = await commit("quote:1:send", "committed");
    const refused = await commit("quote:2:send", "failed");
    expectKind(await prepare("quote:3:send", run), "prepared");
    const last = refused.updatedAt;

    expect(await pruneAt({ operationTtlMs: TTL_MS }, sent.updatedAt + TTL_MS)).toMatchObject({ operations: 0 });
    expect(await pruneAt({ operationTtlMs: TTL_MS }, last + TTL_MS + 1)).toMatchObject({ operations: 2 });
    const rows = await store.listOperations(TENANT, run.threadId);
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatchObject({ opId: sent.opId, phase: "committed", input: "", preview: null, result: null, error: null, resultKind: "array", commitAttempts: 1 });
    expect(rows[0]!.idempotencyKey).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(rows[1]).toMatchObject({ opId: refused.opId, phase: "failed", error: null, resultKind: null });
    expect(JSON.stringify(rows.slice(0, 2))).not.toContain("ada@example.com");
    // Still live: a prepared operation is never reduced, however old.
    expect(rows[2]).toMatchObject({ phase: "prepared", idempotencyKey: "quote:3:send", reducedAt: null });

    const retry = await fx.runningRun();
    const again = expectKind(await prepare("quote:1:send", retry), "committed");
    expect(again.operation).toMatchObject({ opId: sent.opId, commitAttempts: 1 });
    expect(again.operation.reducedAt).toEqual(expect.any(Number));
    const reprepared = expectKind(await prepare("quote:2:send", retry), "prepared");
    expect(reprepared.operation).toMatchObject({ opId: refused.opId, idempotencyKey: "quote:2:send", reducedAt: null, input: JSON.stringify({ to: "ada@example.com" }) });
    await fx.expectClean();
  });
});
