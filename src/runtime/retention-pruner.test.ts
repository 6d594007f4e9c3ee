/**
 * The server's pruner on fake time over a real SQLite store: it sweeps at start and then every
 * interval, on the injected clock; a backlog is pruned in bounded batches; and a stop ends the
 * sweep after the batch under way (shutdown never waits for a whole backlog).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createId, silentLogger, type RetentionSettings } from "../core/index.js";
import type { Store } from "../store/index.js";
import { createSqliteStore } from "../store/sqlite/index.js";
import { createFakeTime, type FakeTime } from "../../test/support/fake-timers.js";
import { RetentionPruner } from "./retention-pruner.js";

const HOUR_MS = 3_600_000;
const ONLY_TRACES: RetentionSettings = {
  traceTtlMs: HOUR_MS,
  runDetailTtlMs: Number.POSITIVE_INFINITY,
  fragmentTtlMs: Number.POSITIVE_INFINITY,
  operationTtlMs: Number.POSITIVE_INFINITY,
};

let store: Store;
let time: FakeTime;

beforeEach(() => {
  store = createSqliteStore({ path: ":memory:" });
  time = createFakeTime();
});
afterEach(async () => {
  await store.close();
});

/** `count` traces written at `at`. */
async function traces(count: number, at: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    await store.appendTrace({ tenantId: "t", traceId: createId("run"), runId: "run_a", threadId: "thr_a", kind: "k", data: { index }, at });
  }
}

const pruner = (batchSize: number) =>
  new RetentionPruner({ store, clock: time.clock, timers: time.timers, logger: silentLogger, settings: ONLY_TRACES, intervalMs: 10 * 60_000, batchSize });

describe("RetentionPruner", () => {
  it("sweeps at start and every interval, on the injected clock, a batch at a time", async () => {
    await traces(5, time.now());
    const running = pruner(2);
    running.start();
    await running.pruneOnce();
    expect(await store.listTraces("t", "run_a")).toHaveLength(5);
    // Kept for exactly its setting: an hour on, the interval's sweeps leave every trace.
    await time.advance(HOUR_MS);
    await running.pruneOnce();
    expect(await store.listTraces("t", "run_a")).toHaveLength(5);
    // The next interval's sweep takes them all, in batches of 2 (joined here until it ends).
    await time.advance(10 * 60_000);
    await running.pruneOnce();
    expect(await store.countExpired("traces", time.now())).toBe(0);
    expect(await store.listTraces("t", "run_a")).toEqual([]);
    await running.stop();
    expect(time.pending()).toEqual([]);
  });

  it("a stop ends the sweep after the batch under way", async () => {
    await traces(6, time.now());
    await time.advance(HOUR_MS + 1);
    const running = pruner(2);
    const sweep = running.pruneOnce();
    await running.stop();
    expect(await sweep).toMatchObject({ traces: 2 });
    expect(await store.listTraces("t", "run_a")).toHaveLength(4);
  });
});
