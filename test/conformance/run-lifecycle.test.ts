/**
 * The store contract for a run's end, on every adapter: finishing is a compare-and-set, terminal
 * is sticky, and a transition moves only along a legal edge.
 */
import { describe, expect, it } from "vitest";
import type { RunRecord, RunStatus } from "../../src/core/index.js";
import { adapters } from "./adapters.js";
import { expectKind, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick, newThread, newRun, runningRun, publishInput, cancel, snapshot } = fx;

describe.each(adapters)("finishRun ($name)", (adapter) => {
  fx.use(adapter);

  it("is a compare-and-set on the current status", async () => {
    const run = await runningRun();

    const wrongFrom = await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["queued"], stats: {}, now: tick() });
    const done = await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["running"], stats: {}, now: tick() });

    expect(wrongFrom).toBeUndefined();
    expect(done).toMatchObject({ status: "completed", endedAt: fx.now, leaseOwner: null, leaseExpiresAt: null, activeOperation: null });
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

describe.each(adapters)("terminal is sticky ($name)", (adapter) => {
  fx.use(adapter);

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
    expect(await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w9", leaseExpiresAt: fx.now + 1, now: tick() })).toBeUndefined();
    expect((await store.publishMessage(publishInput(run))).kind).toBe("rejected");
    expect((await cancel(run)).kind).toBe("already_terminal");

    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
  });
});

describe.each(adapters)("transitionRun ($name)", (adapter) => {
  fx.use(adapter);

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
