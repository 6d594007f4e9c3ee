/**
 * The lease heartbeat and the recovery sweep on fake time: the runtime's clock and timers are the
 * test's, so a lease lapses when the test moves the clock past it, never a moment earlier or later.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createId } from "../src/core/index.js";
import { createRuntime, type Runtime } from "../src/runtime/index.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { eventually } from "./support/eventually.js";
import { createFakeTime, type FakeTime } from "./support/fake-timers.js";
import { createHeldModel } from "./support/held-model.js";

const TENANT = "local";
const LEASE_MS = 15_000;

describe("leases on fake time", () => {
  let dir: string;
  let store: Store;
  let time: FakeTime;
  let runtime: Runtime | undefined;
  const held = createHeldModel();

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-leases-"));
    store = createSqliteStore({ path: join(dir, "store.db") });
    time = createFakeTime();
  });
  afterEach(async () => {
    held.release();
    await runtime?.close();
    runtime = undefined;
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const startRuntime = async () => {
    runtime = createRuntime({ store, model: held.model, clock: time.clock, timers: time.timers, leaseMs: LEASE_MS, workerId: "wrk_here" });
    await runtime.start();
    return runtime;
  };
  const leaseOf = async (runId: string) => (await store.getRun(TENANT, runId))?.leaseExpiresAt;

  it("the heartbeat renews the lease of a run this process executes, so it outlives its first expiry", async () => {
    const runtime = await startRuntime();
    const thread = await runtime.createThread(TENANT);
    const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: "hold on" } });
    await held.whenHeld();
    const claimedAt = time.now();
    expect(await leaseOf(run.runId)).toBe(claimedAt + LEASE_MS);

    // The heartbeat runs every third of the lease.
    await time.advance(LEASE_MS / 3);
    await eventually(async () => expect(await leaseOf(run.runId)).toBe(claimedAt + LEASE_MS / 3 + LEASE_MS), { what: "the first renewal" });

    // Past the first expiry the run is still this process's: the sweeps found nothing to recover.
    await time.advance(LEASE_MS);
    await eventually(async () => expect(await leaseOf(run.runId)).toBe(time.now() + LEASE_MS), { what: "the latest renewal" });
    expect(await store.getRun(TENANT, run.runId)).toMatchObject({ status: "running", attempt: 1, leaseOwner: "wrk_here" });

    held.release();
    await runtime.hub.get(TENANT, run.runId)!.whenTerminal();
    expect((await store.getRun(TENANT, run.runId))?.status).toBe("completed");
  });

  it("the sweep recovers a run whose worker stopped renewing, once its lease has lapsed and not before", async () => {
    const thread = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: time.now() });
    const created = await store.createRun({
      tenantId: TENANT,
      runId: createId("run"),
      threadId: thread.threadId,
      input: { role: "user", content: "lost" },
      inputMessageId: createId("msg"),
      checkpointId: createId("cp"),
      idempotencyKey: null,
      requestHash: "lost",
      model: "test",
      onDisconnect: "continue",
      recoveryPolicy: "fail",
      expectedStateVersion: null,
      now: time.now(),
    });
    if (created.kind !== "created") throw new Error(created.kind);
    const runId = created.run.runId;
    const expiresAt = time.now() + LEASE_MS;
    // Claimed by a worker that died at once: nobody renews this lease.
    expect(await store.claimRun({ tenantId: TENANT, runId, owner: "wrk_gone", leaseExpiresAt: expiresAt, now: time.now() })).toBeDefined();

    const runtime = await startRuntime();
    // Up to the last moment of the lease, a recovery (the sweep's, or this one) leaves the run alone.
    await time.advance(LEASE_MS);
    expect(time.now()).toBe(expiresAt);
    expect(await runtime.recover()).toBe(0);
    expect(await store.getRun(TENANT, runId)).toMatchObject({ status: "running", leaseOwner: "wrk_gone" });

    // The next sweep comes after the lease lapsed: the run fails as lost.
    await time.advance(LEASE_MS / 2);
    const recovered = await eventually(
      async () => {
        const run = await store.getRun(TENANT, runId);
        expect(run?.status).toBe("failed");
        return run!;
      },
      { what: `the sweep recovering ${runId}` },
    );
    expect(recovered).toMatchObject({ status: "failed", failureReason: "worker_lost" });
  });
});
