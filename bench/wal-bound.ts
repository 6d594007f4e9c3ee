import { statSync } from "node:fs";
import { join } from "node:path";
import { createId } from "../src/core/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { DEFAULT_WAL_LIMIT_BYTES } from "../src/store/sqlite/sqlite-store.js";
import { createTempDir } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { median, percentile, round } from "./statistics.js";

/**
 * The SQLite WAL under writes that never pause: a writer at a steady 1,200 transactions a second
 * (about 40 MB of WAL a second, the order of a busy embedded server) for 15 s, with the store's
 * default WAL limit (256 MB) and without one (the limit set out of reach: PASSIVE checkpoints
 * only, as before), alternately, twice each. Reported: the WAL file's largest size, the restarts,
 * and how long a write transaction took (a restart holds the write lock while it copies and fsyncs).
 */

const WRITES_PER_SECOND = 1_200;
const SECONDS = 15;
const ROUNDS = 2;
/** A limit no run reaches: the WAL is never made to start over. */
const OUT_OF_REACH_BYTES = 1e15;
const METADATA = { pad: "x".repeat(2_000) };

interface RoundResult {
  largestWalMb: number;
  restarts: number;
  writeMs: number[];
}

/** `walLimitBytes`: undefined for the store's default, as `tidemark serve` runs. */
async function writeSteadily(walLimitBytes: number | undefined): Promise<RoundResult> {
  const temp = createTempDir("wal-bound");
  const path = join(temp.dir, "wal.db");
  let restarts = 0;
  const store = createSqliteStore({
    path,
    ...(walLimitBytes === undefined ? {} : { walLimitBytes }),
    onWalCheckpoint: ({ restart }) => void (restart === "made" && restarts++),
  });
  const walBytes = (): number => statSync(`${path}-wal`).size;
  const writeMs: number[] = [];
  let largest = 0;
  try {
    const startedAt = performance.now();
    const total = WRITES_PER_SECOND * SECONDS;
    for (let index = 0; index < total; index++) {
      const writeStartedAt = performance.now();
      await store.createThread({ tenantId: "bench", threadId: createId("thr"), checkpointId: createId("cp"), metadata: METADATA, now: index });
      writeMs.push(performance.now() - writeStartedAt);
      if (index % 100 === 99) largest = Math.max(largest, walBytes());
      // Paced, not a timer per write: sleeps only when ahead of the schedule.
      const aheadMs = startedAt + ((index + 1) * 1000) / WRITES_PER_SECOND - performance.now();
      if (aheadMs > 1) await new Promise((resolve) => setTimeout(resolve, aheadMs));
    }
    largest = Math.max(largest, walBytes());
  } finally {
    await store.close();
    temp.remove();
  }
  return { largestWalMb: largest / 1e6, restarts, writeMs };
}

export const walBound: Benchmark = {
  name: "wal-bound",
  summary: "SQLite's WAL under writes that never pause (1,200 transactions a second for 15 s): its largest size, restarts and write times, with the default 256 MB limit against without",
  async run({ log }): Promise<BenchmarkResult> {
    const limited: RoundResult[] = [];
    const unlimited: RoundResult[] = [];
    for (let index = 0; index < ROUNDS; index++) {
      unlimited.push(await writeSteadily(OUT_OF_REACH_BYTES));
      limited.push(await writeSteadily(undefined));
      log(`wal-bound: round ${index + 1} of ${ROUNDS}`);
    }
    const pooled = (results: RoundResult[]): number[] => results.flatMap((result) => result.writeMs);
    const largest = (results: RoundResult[]): number => Math.max(...results.map((result) => result.largestWalMb));
    const withLimit = pooled(limited);
    const without = pooled(unlimited);
    const figure = (label: string, value: number, unit: string, baseline: number): Figure =>
      compared({ label: `${label}, 256 MB limit`, value: round(value, 2), unit }, { label: "no limit", value: round(baseline, 2) });
    const figures: Figure[] = [
      {
        ...figure("largest WAL file", largest(limited), "MB", largest(unlimited)),
        target: "bounded (≤ 2 × the limit)",
        isMet: largest(limited) <= (2 * DEFAULT_WAL_LIMIT_BYTES) / 1e6,
      },
      { label: "restarts a round, 256 MB limit", value: median(limited.map((result) => result.restarts)), unit: "" },
      figure("write transaction p50", median(withLimit), "ms", median(without)),
      figure("write transaction p99", percentile(withLimit, 99), "ms", percentile(without, 99)),
      figure("write transaction p99.9", percentile(withLimit, 99.9), "ms", percentile(without, 99.9)),
      figure("write transaction max", Math.max(...withLimit), "ms", Math.max(...without)),
    ];
    return {
      figures,
      details: {
        writesPerSecond: WRITES_PER_SECOND,
        seconds: SECONDS,
        rounds: ROUNDS,
        limited: limited.map(({ largestWalMb, restarts }) => ({ largestWalMb: round(largestWalMb, 1), restarts })),
        unlimited: unlimited.map(({ largestWalMb, restarts }) => ({ largestWalMb: round(largestWalMb, 1), restarts })),
      },
    };
  },
};
