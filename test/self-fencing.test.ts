/**
 * Self-fencing on fake time (decision 014): a worker whose lease renewals hang or fail stops its
 * runs itself a third of the lease before the lease would expire: their provider requests are
 * closed (a real HTTP upstream), nothing more is emitted or published, their leases are never
 * renewed again, and recovery applies each run's policy once the lease expired. Renewals that
 * come back in time stop nothing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkStore, formatCheckReport } from "../src/check/index.js";
import type { RecoveryPolicy, RunEvent } from "../src/core/index.js";
import { createOpenAICompatibleModel } from "../src/models/index.js";
import { createRuntime, type Runtime } from "../src/runtime/index.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { startTestProvider, type RecordedRequest, type TestProvider } from "../src/testing/index.js";
import { eventually } from "./support/eventually.js";
import { createFakeTime, type FakeTime } from "./support/fake-timers.js";

const TENANT = "local";
const LEASE_MS = 15_000;
/** The fence margin: a run is let go of a third of the lease before its known expiry. */
const FENCE_AT_MS = LEASE_MS - LEASE_MS / 3;
/** Long enough that only a Stop or a fence ends it (about 100 s of real time). */
const ENDLESS = { chunks: 10_000, intervalMs: 10 };
const SHORT = { chunks: 5, intervalMs: 1 };
const FENCED_MESSAGE = /self-fenced/;

type RenewalMode = "answer" | "hang" | "fail";

/** The store, except that lease renewals hang (a stalled connection) or fail while the test says so. */
function withRenewals(store: Store): { store: Store; mode: RenewalMode } {
  const control = { mode: "answer" as RenewalMode, store };
  control.store = new Proxy(store, {
    get(target, property) {
      if (property === "renewLeases" && control.mode !== "answer") {
        return () => (control.mode === "hang" ? new Promise<never>(() => undefined) : Promise.reject(new Error("connection refused")));
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return control;
}

interface LogEntry {
  level: string;
  message: string;
  data: Record<string, unknown>;
}

describe("self-fencing: a worker that cannot renew its leases stops its runs (fake time)", () => {
  let dir: string;
  let sqlite: Store;
  let renewals: ReturnType<typeof withRenewals>;
  let time: FakeTime;
  let provider: TestProvider;
  let runtime: Runtime | undefined;
  let logs: LogEntry[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-fencing-"));
    sqlite = createSqliteStore({ path: join(dir, "store.db") });
    renewals = withRenewals(sqlite);
    time = createFakeTime();
    provider = await startTestProvider({ scenario: ENDLESS });
    logs = [];
  });
  afterEach(async () => {
    await runtime?.close();
    runtime = undefined;
    await provider.close();
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const startRuntime = async (): Promise<Runtime> => {
    const entry = (level: string) => (data: Record<string, unknown>, message: string) => void logs.push({ level, message, data });
    runtime = createRuntime({
      store: renewals.store,
      model: createOpenAICompatibleModel({ model: "test", baseURL: provider.url }),
      clock: time.clock,
      timers: time.timers,
      leaseMs: LEASE_MS,
      workerId: "wrk_here",
      logger: { info: entry("info"), warn: entry("warn"), error: entry("error") },
    });
    await runtime.start();
    return runtime;
  };

  /** Starts a run on a thread of its own and waits until its provider request streams (the thread's title is asked for apart). */
  const startStreaming = async (runtime: Runtime, policy: RecoveryPolicy): Promise<{ runId: string; threadId: string; request: RecordedRequest }> => {
    const thread = await runtime.createThread(TENANT);
    const content = `a long story (${policy})`;
    const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content }, recoveryPolicy: policy });
    const request = await eventually(
      () => {
        const found = provider.requests.find((candidate) => (candidate.body as { stream?: boolean })?.stream === true && JSON.stringify(candidate.body).includes(content));
        if (!found) throw new Error(`no streamed request for ${content} among ${provider.requests.length}`);
        return found;
      },
      { what: `the provider request of ${run.runId}` },
    );
    await provider.waitForChunks(request, 3);
    return { runId: run.runId, threadId: thread.threadId, request };
  };
  const fencedLogs = () => logs.filter((entry) => FENCED_MESSAGE.test(entry.message));
  const events = (runId: string): RunEvent[] => {
    const buffer = runtime!.hub.get(TENANT, runId)!;
    return buffer.eventsBetween(0, buffer.lastSeq);
  };
  const deltas = (list: readonly RunEvent[]) => list.filter((event) => event.type === "message.delta").length;
  const waitForStatus = (runId: string, status: string) =>
    eventually(
      async () => {
        const run = await sqlite.getRun(TENANT, runId);
        if (run?.status !== status) throw new Error(`${runId} is ${run?.status}`);
        return run;
      },
      { what: `${runId} becoming ${status}` },
    );

  it("renewals that hang: both runs are stopped before their lease expires, their requests closed, and recovered by policy after it", async () => {
    const runtime = await startRuntime();
    const failing = await startStreaming(runtime, "fail");
    const resuming = await startStreaming(runtime, "resume");
    const claimedAt = time.now();
    const expiresAt = claimedAt + LEASE_MS;
    for (const { runId } of [failing, resuming]) expect((await sqlite.getRun(TENANT, runId))?.leaseExpiresAt).toBe(expiresAt);

    // The database stops answering: every renewal from now on hangs.
    renewals.mode = "hang";
    await time.advance(FENCE_AT_MS - 1);
    expect(fencedLogs()).toEqual([]);
    expect(failing.request.socketClosedAt).toBeUndefined();
    expect(logs.some((entry) => entry.message === "lease renewal failed")).toBe(true);

    // A third of the lease before it expires, the worker lets go of both runs.
    await time.advance(1);
    expect(time.now()).toBe(expiresAt - LEASE_MS / 3);
    expect(fencedLogs()).toHaveLength(1);
    expect(fencedLogs()[0]!.data).toMatchObject({ worker_id: "wrk_here", lease_expires_at: expiresAt });
    expect(new Set(fencedLogs()[0]!.data.run_ids as string[])).toEqual(new Set([failing.runId, resuming.runId]));
    // The abort reached the provider: both upstream requests closed, no chunk written after.
    for (const { request } of [failing, resuming]) {
      await request.closed;
      expect(provider.chunksAfter(request, request.socketClosedAt!)).toBe(0);
    }
    await eventually(() => expect(runtime.activeRunCount).toBe(0), { what: "the fenced executions ending" });
    const deltasAtFence = new Map([failing, resuming].map(({ runId }) => [runId, deltas(events(runId))]));
    for (const { runId } of [failing, resuming]) {
      expect(events(runId).at(-1)?.type).toBe("message.delta");
      // The fenced worker wrote no end: the run is still running under its (unrenewed) lease.
      expect(await sqlite.getRun(TENANT, runId)).toMatchObject({ status: "running", attempt: 1, leaseOwner: "wrk_here", leaseExpiresAt: expiresAt, publishedMessageId: null });
    }

    // The database answers again before the lease expired: the fenced runs' leases are not renewed.
    renewals.mode = "answer";
    provider.setScenario(SHORT);
    await time.advance(LEASE_MS / 3);
    expect(time.now()).toBe(expiresAt);
    for (const { runId } of [failing, resuming]) expect(await sqlite.getRun(TENANT, runId)).toMatchObject({ status: "running", leaseExpiresAt: expiresAt });

    // The next sweep, after the lease lapsed, applies each run's policy.
    await time.advance(LEASE_MS / 2);
    const failed = await waitForStatus(failing.runId, "failed");
    expect(failed).toMatchObject({ failureReason: "worker_lost", attempt: 1, publishedMessageId: null });
    const completed = await waitForStatus(resuming.runId, "completed");
    expect(completed.attempt).toBe(2);

    // Nothing of the fenced attempts came after the fence: the failed run's stream goes on with its end only.
    const failedEvents = events(failing.runId);
    expect(deltas(failedEvents)).toBe(deltasAtFence.get(failing.runId));
    expect(failedEvents.at(-1)).toMatchObject({ type: "run.failed", reason: "worker_lost" });
    // The resumed run published its answer once, from its second attempt.
    const history = await sqlite.listMessages(TENANT, resuming.threadId);
    expect(history.filter((message) => message.role === "assistant").map((message) => message.runId)).toEqual([resuming.runId]);
    expect((await sqlite.listMessages(TENANT, failing.threadId)).filter((message) => message.role === "assistant")).toEqual([]);
    const traces = await sqlite.listTraces(TENANT, failing.runId);
    expect(traces.map((trace) => trace.kind)).toContain("lease_lost");
    const report = await checkStore(sqlite);
    if (report.violations.length > 0) throw new Error(formatCheckReport(report));
  });

  it("renewals that fail or hang for a while but answer again in time stop nothing", async () => {
    const runtime = await startRuntime();
    const run = await startStreaming(runtime, "fail");
    const claimedAt = time.now();

    // The first heartbeat hangs (no answer within a sixth of the lease), its retry fails outright.
    renewals.mode = "hang";
    await time.advance(LEASE_MS / 3 + LEASE_MS / 6 - 1);
    renewals.mode = "fail";
    await time.advance(1);
    // The database answers again shortly before the fence: the next retry renews the lease.
    renewals.mode = "answer";
    await time.advance(FENCE_AT_MS - 1 - (time.now() - claimedAt));
    const renewed = (await sqlite.getRun(TENANT, run.runId))!.leaseExpiresAt!;
    expect(renewed).toBeGreaterThan(claimedAt + LEASE_MS);

    await time.advance(2 * LEASE_MS);
    expect(fencedLogs()).toEqual([]);
    expect(logs.map((entry) => entry.message)).toContain("lease renewals succeed again");
    expect(run.request.socketClosedAt).toBeUndefined();
    expect(await sqlite.getRun(TENANT, run.runId)).toMatchObject({ status: "running", attempt: 1, leaseOwner: "wrk_here" });
    expect((await sqlite.getRun(TENANT, run.runId))!.leaseExpiresAt).toBeGreaterThan(time.now());

    await runtime.cancelRun(TENANT, run.runId, "user_requested");
    await waitForStatus(run.runId, "cancelled");
  });
});
