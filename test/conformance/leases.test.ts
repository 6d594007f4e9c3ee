/**
 * The store contract for leases and recovery, on every adapter: renewals, releases, the runs
 * recovery must take over, the queue a worker claims from, and the cancels a worker must honour.
 */
import { describe, expect, it } from "vitest";
import { createId, type RunRecord } from "../../src/core/index.js";
import { adapters } from "./adapters.js";
import { expectKind, OTHER_TENANT, StoreFixture, T0, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick, newThread, runInput, newRun, runningRun, cancel } = fx;

describe.each(adapters)("leases and recovery ($name)", (adapter) => {
  fx.use(adapter);

  it("lists runs with an expired lease and old unclaimed queued runs, not fresh ones", async () => {
    const expired = await runningRun({ owner: "dead-worker" });
    const leased = await runningRun({ owner: "live-worker" });
    const oldQueued = await newRun((await newThread()).threadId);
    const finished = await runningRun({ owner: "dead-worker" });
    await store.finishRun({ tenantId: TENANT, runId: finished.runId, to: "completed", from: ["running"], stats: {}, now: tick() });
    fx.now += 60_000;
    const freshQueued = await newRun((await newThread()).threadId);
    await store.renewLeases("live-worker", fx.now + 30_000);

    const recoverable = await store.listRecoverableRuns(fx.now, freshQueued.createdAt - 1);

    expect(recoverable.map((run) => run.runId)).toEqual([expired.runId, oldQueued.runId]);
    expect(recoverable.map((run) => run.runId)).not.toContain(leased.runId);
  });

  it("renewLeases extends only the owner's unfinished runs", async () => {
    const mine = await runningRun({ owner: "w1" });
    const alsoMine = await runningRun({ tenantId: OTHER_TENANT, owner: "w1" });
    const theirs = await runningRun({ owner: "w2" });
    const done = await runningRun({ owner: "w1" });
    await store.finishRun({ tenantId: TENANT, runId: done.runId, to: "failed", from: ["running"], stats: {}, now: tick() });

    expect(await store.renewLeases("w1", T0 + 999_000)).toBe(2);

    expect((await store.getRun(TENANT, mine.runId))?.leaseExpiresAt).toBe(T0 + 999_000);
    expect((await store.getRun(OTHER_TENANT, alsoMine.runId))?.leaseExpiresAt).toBe(T0 + 999_000);
    expect((await store.getRun(TENANT, theirs.runId))?.leaseExpiresAt).toBe(theirs.leaseExpiresAt);
    expect((await store.getRun(TENANT, done.runId))?.leaseExpiresAt).toBeNull();
  });

  it("renewLeases with runs extends only those of the owner's leases (a fenced run's lease is left to lapse)", async () => {
    const kept = await runningRun({ owner: "w1" });
    const keptElsewhere = await runningRun({ tenantId: OTHER_TENANT, owner: "w1" });
    const fenced = await runningRun({ owner: "w1" });
    const theirs = await runningRun({ owner: "w2" });
    const runs = [kept, keptElsewhere, theirs].map((run) => ({ tenantId: run.tenantId, runId: run.runId }));

    expect(await store.renewLeases("w1", T0 + 999_000, { runs })).toBe(2);

    expect((await store.getRun(TENANT, kept.runId))?.leaseExpiresAt).toBe(T0 + 999_000);
    expect((await store.getRun(OTHER_TENANT, keptElsewhere.runId))?.leaseExpiresAt).toBe(T0 + 999_000);
    expect((await store.getRun(TENANT, fenced.runId))?.leaseExpiresAt).toBe(fenced.leaseExpiresAt);
    expect((await store.getRun(TENANT, theirs.runId))?.leaseExpiresAt).toBe(theirs.leaseExpiresAt);
    // The same run id under another tenant is another run.
    expect(await store.renewLeases("w1", T0 + 999_001, { runs: [{ tenantId: OTHER_TENANT, runId: kept.runId }] })).toBe(0);
    expect(await store.renewLeases("w1", T0 + 999_001, { runs: [] })).toBe(0);
  });

  it("releaseLease makes only the owner's run recoverable at once", async () => {
    const mine = await runningRun({ owner: "w1" });
    const theirs = await runningRun({ owner: "w2" });
    await store.releaseLease(TENANT, mine.runId, "w1");
    await store.releaseLease(TENANT, theirs.runId, "w1");
    const recoverable = await store.listRecoverableRuns(fx.now, 0);
    expect(recoverable.map((run) => run.runId)).toEqual([mine.runId]);
    // A renewal by the owner does not bring a released lease back to life.
    await store.renewLeases("w1", fx.now + 30_000);
    expect(await store.getRun(TENANT, mine.runId)).toMatchObject({ leaseOwner: null, leaseExpiresAt: 0 });
    expect((await store.listRecoverableRuns(fx.now, 0)).map((run) => run.runId)).toEqual([mine.runId]);
  });
});

describe.each(adapters)("takeOverLease and attempt fencing ($name)", (adapter) => {
  fx.use(adapter);

  const takeOver = (run: RunRecord, owner: string, attempt = run.attempt) =>
    store.takeOverLease({ tenantId: TENANT, runId: run.runId, attempt, owner, leaseExpiresAt: fx.now + 30_000, now: fx.now });

  it("gives a lost attempt's expired lease to exactly one recoverer", async () => {
    const run = await runningRun({ owner: "dead-worker" });
    expect(await takeOver(run, "recoverer-1")).toBe(false);
    fx.now += 60_000;

    expect(await takeOver(run, "recoverer-1")).toBe(true);
    expect(await takeOver(run, "recoverer-2")).toBe(false);
    expect((await store.getRun(TENANT, run.runId))?.leaseOwner).toBe("recoverer-1");
    expect(await store.listRecoverableRuns(fx.now, 0)).toEqual([]);
  });

  it("refuses a stale recoverer once the run moved to its next attempt, whose writes it cannot touch", async () => {
    const run = await runningRun({ owner: "dead-worker" });
    fx.now += 60_000;
    expect(await takeOver(run, "recoverer-1")).toBe(true);
    const requeued = await store.transitionRun({ tenantId: TENANT, runId: run.runId, attempt: run.attempt, from: ["running"], to: "queued", now: tick() });
    expect(requeued?.attempt).toBe(run.attempt + 1);
    const next = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "worker-2", leaseExpiresAt: fx.now + 30_000, now: tick() });
    fx.now += 60_000;

    // A recoverer still holding the first attempt in its list changes nothing.
    expect(await takeOver(run, "recoverer-2")).toBe(false);
    const base = { tenantId: TENANT, runId: run.runId, attempt: run.attempt, now: tick() };
    expect(await store.transitionRun({ ...base, from: ["running"], to: "queued" })).toBeUndefined();
    expect(await store.finishRun({ ...base, to: "failed", from: ["running"], stats: {}, failureReason: "worker_lost" })).toBeUndefined();
    expect(await store.getRun(TENANT, run.runId)).toMatchObject({ status: "running", attempt: next!.attempt, leaseOwner: "worker-2" });
    // The current attempt's own writes still go through.
    expect(await store.finishRun({ ...base, attempt: next!.attempt, to: "completed", from: ["running"], stats: {} })).toMatchObject({ status: "completed" });
  });
});

describe.each(adapters)("claimQueuedRuns ($name)", (adapter) => {
  fx.use(adapter);

  const claim = (limit: number, owner = "w1") =>
    store.claimQueuedRuns({ owner, leaseExpiresAt: fx.now + 30_000, limit, now: tick() });

  it("claims the oldest queued runs first, up to the limit, as claimRun does each", async () => {
    const first = await newRun((await newThread()).threadId);
    const second = await newRun((await newThread(OTHER_TENANT)).threadId, { tenantId: OTHER_TENANT });
    const third = await newRun((await newThread()).threadId);
    const threadsBefore = [
      await store.getThread(TENANT, first.threadId),
      await store.getThread(OTHER_TENANT, second.threadId),
      await store.getThread(TENANT, third.threadId),
    ];

    expect(await claim(0)).toEqual([]);
    expect((await store.getRun(TENANT, first.runId))?.status).toBe("queued");

    const leaseExpiresAt = fx.now + 30_000;
    const claimed = await claim(2);
    const claimedAt = fx.now;

    expect(claimed.map((run) => run.runId)).toEqual([first.runId, second.runId]);
    for (const run of claimed) {
      expect(run).toMatchObject({ status: "running", attempt: 1, leaseOwner: "w1", leaseExpiresAt, startedAt: claimedAt });
      expect(await store.getRun(run.tenantId, run.runId)).toEqual(run);
    }
    expect((await store.getRun(TENANT, third.runId))?.status).toBe("queued");

    const rest = await claim(5, "w2");
    expect(rest.map((run) => run.runId)).toEqual([third.runId]);
    expect(rest[0]).toMatchObject({ status: "running", leaseOwner: "w2" });
    expect(await claim(5, "w3")).toEqual([]);
    // A claim publishes nothing: the threads did not move.
    expect([
      await store.getThread(TENANT, first.threadId),
      await store.getThread(OTHER_TENANT, second.threadId),
      await store.getThread(TENANT, third.threadId),
    ]).toEqual(threadsBefore);
    await fx.expectClean();
  });

  it("skips waiting, leased and finished runs, and takes a handed-back run as its next attempt", async () => {
    const leased = await runningRun({ owner: "w9" });
    const waiting = expectKind(await store.createRun(runInput(leased.threadId, { enqueue: true })), "enqueued").run;
    const expiredLease = await runningRun({ owner: "dead-worker" });
    const cancelledQueued = await newRun((await newThread()).threadId);
    expectKind(await cancel(cancelledQueued), "accepted");
    const cancelRequested = await runningRun({ owner: "w9" });
    expectKind(await cancel(cancelRequested), "accepted");
    const completed = await runningRun({ owner: "w9" });
    await store.finishRun({ tenantId: TENANT, runId: completed.runId, to: "completed", from: ["running"], stats: {}, now: tick() });
    const handedBack = await runningRun({ owner: "w9" });
    await store.transitionRun({ tenantId: TENANT, runId: handedBack.runId, from: ["running"], to: "queued", now: tick() });
    fx.now += 60_000;
    await store.renewLeases("w9", fx.now + 30_000);
    const untouched = [leased, waiting, expiredLease, cancelledQueued, cancelRequested, completed];
    const before = await Promise.all(untouched.map((run) => store.getRun(TENANT, run.runId)));

    const claimed = await claim(10);

    expect(claimed.map((run) => run.runId)).toEqual([handedBack.runId]);
    expect(claimed[0]).toMatchObject({ status: "running", attempt: 2, leaseOwner: "w1", startedAt: handedBack.startedAt });
    expect(await Promise.all(untouched.map((run) => store.getRun(TENANT, run.runId)))).toEqual(before);
  });

  it("claims a waiting run once it was admitted", async () => {
    const active = await runningRun();
    const waiting = expectKind(await store.createRun(runInput(active.threadId, { enqueue: true })), "enqueued").run;
    expect(await claim(10)).toEqual([]);

    await store.finishRun({ tenantId: TENANT, runId: active.runId, to: "completed", from: ["running"], stats: {}, now: tick() });
    const admitted = await store.admitNextRun(TENANT, active.threadId, createId("cp"), tick());
    expect(admitted?.runId).toBe(waiting.runId);

    expect((await claim(10)).map((run) => run.runId)).toEqual([waiting.runId]);
    expect(await claim(10)).toEqual([]);
    await fx.expectClean();
  });
});

describe.each(adapters)("listCancelledRuns ($name)", (adapter) => {
  fx.use(adapter);

  it("lists only the owner's runs whose cancel was accepted and that have not stopped, oldest first", async () => {
    const requested = await runningRun({ owner: "w1" });
    const running = await runningRun({ owner: "w1" });
    const cancelling = await runningRun({ owner: "w1" });
    const foreignTenant = await runningRun({ tenantId: OTHER_TENANT, owner: "w1" });
    const otherOwner = await runningRun({ owner: "w2" });
    const stopped = await runningRun({ owner: "w1" });
    const queued = await newRun((await newThread()).threadId);
    for (const run of [requested, cancelling, foreignTenant, otherOwner, stopped, queued]) expectKind(await cancel(run), "accepted");
    await store.transitionRun({ tenantId: TENANT, runId: cancelling.runId, from: ["cancel_requested"], to: "cancelling", now: tick() });
    await store.finishRun({ tenantId: TENANT, runId: stopped.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: tick() });

    const listed = await store.listCancelledRuns("w1");

    expect(listed.map((run) => run.runId)).toEqual([requested.runId, cancelling.runId, foreignTenant.runId]);
    expect(listed.map((run) => run.status)).toEqual(["cancel_requested", "cancelling", "cancel_requested"]);
    for (const run of listed) expect(await store.getRun(run.tenantId, run.runId)).toEqual(run);
    expect((await store.listCancelledRuns("w2")).map((run) => run.runId)).toEqual([otherOwner.runId]);
    expect(await store.listCancelledRuns("nobody")).toEqual([]);
    expect((await store.getRun(TENANT, running.runId))?.status).toBe("running");
  });

  it("forgets a run whose lease its owner released", async () => {
    const run: RunRecord = await runningRun({ owner: "w1" });
    expectKind(await cancel(run), "accepted");
    expect((await store.listCancelledRuns("w1")).map((listed) => listed.runId)).toEqual([run.runId]);

    await store.releaseLease(TENANT, run.runId, "w1");

    expect(await store.listCancelledRuns("w1")).toEqual([]);
  });
});
