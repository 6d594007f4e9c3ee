import { join } from "node:path";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { createTempDir, openSizeInspector } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult } from "./benchmark.js";
import { createGrowingThread, PUBLISHED_CONTENT } from "./growing-thread.js";
import { median, round } from "./statistics.js";

const BATCH = 200;
const EARLY_POSITION = 10;
const LATE_POSITION = 10_000;
const REPETITIONS = 3;

/** One measured batch of publishes: time per publish and the file growth it caused. */
interface BatchCost {
  medianMicros: number;
  meanMicros: number;
  /** Growth of the allocated database pages (page_count − freelist_count) per publish. */
  pageBytes: number;
  /** Growth of the stored payload (dbstat) per publish: the bytes actually written into rows. */
  payloadBytes: number;
}

async function measureBatch(publish: () => Promise<void>, inspector: ReturnType<typeof openSizeInspector>): Promise<BatchCost> {
  const usedBefore = inspector.usedBytes();
  const payloadBefore = inspector.payloadBytes();
  const times: number[] = [];
  for (let index = 0; index < BATCH; index++) {
    const start = performance.now();
    await publish();
    times.push((performance.now() - start) * 1000);
  }
  return {
    medianMicros: median(times),
    meanMicros: times.reduce((sum, time) => sum + time, 0) / times.length,
    pageBytes: (inspector.usedBytes() - usedBefore) / BATCH,
    payloadBytes: (inspector.payloadBytes() - payloadBefore) / BATCH,
  };
}

/** Grows one thread to LATE_POSITION + BATCH messages on a fresh file, measuring both batches. */
async function repetition(): Promise<{ early: BatchCost; late: BatchCost }> {
  const temp = createTempDir("checkpoint");
  const path = join(temp.dir, "checkpoint.db");
  const store = createSqliteStore({ path });
  const inspector = openSizeInspector(path);
  try {
    const thread = await createGrowingThread(store);
    // The thread holds the user input at position 0; publish up to position EARLY_POSITION.
    for (let position = 1; position < EARLY_POSITION; position++) await thread.publish();
    const early = await measureBatch(thread.publish, inspector);
    for (let position = EARLY_POSITION + BATCH; position < LATE_POSITION; position++) await thread.publish();
    const late = await measureBatch(thread.publish, inspector);
    return { early, late };
  } finally {
    inspector.close();
    await store.close();
    temp.remove();
  }
}

/** Time and bytes of one publish + checkpoint at message 10 and at message 10,000 of one thread. */
export const checkpointCost: Benchmark = {
  name: "checkpoint-cost",
  summary: `publishMessage (message + checkpoint + thread stats, one tx) on SQLite: ${BATCH} publishes at message ${EARLY_POSITION} vs at message ${LATE_POSITION.toLocaleString("en")}`,
  async run({ log }): Promise<BenchmarkResult> {
    // One unmeasured thread on a throwaway file first, so the early batch does not pay for the JIT.
    const warmup = createTempDir("checkpoint-warmup");
    const warmupStore = createSqliteStore({ path: join(warmup.dir, "warmup.db") });
    const warmupThread = await createGrowingThread(warmupStore);
    for (let index = 0; index < 1_000; index++) await warmupThread.publish();
    await warmupStore.close();
    warmup.remove();

    const results: { early: BatchCost; late: BatchCost }[] = [];
    for (let index = 0; index < REPETITIONS; index++) {
      results.push(await repetition());
      log(`checkpoint-cost: repetition ${index + 1}/${REPETITIONS}`);
    }
    const pick = (at: "early" | "late", field: keyof BatchCost) => median(results.map((result) => result[at][field]));
    const earlyMicros = round(pick("early", "medianMicros"), 1);
    const lateMicros = round(pick("late", "medianMicros"), 1);
    const earlyMean = round(pick("early", "meanMicros"), 1);
    const earlyPages = round(pick("early", "pageBytes"), 0);
    const earlyPayload = round(pick("early", "payloadBytes"), 0);
    const timeRatio = lateMicros / earlyMicros;
    const pageRatio = pick("late", "pageBytes") / pick("early", "pageBytes");
    return {
      figures: [
        { label: `time per publish at message ${EARLY_POSITION} (median)`, value: earlyMicros, unit: "µs" },
        {
          ...compared({ label: `time per publish at message ${LATE_POSITION} (median)`, value: lateMicros, unit: "µs" }, { label: `at ${EARLY_POSITION}`, value: earlyMicros }),
          target: "ratio ≤ 1.3",
          isMet: timeRatio <= 1.3,
        },
        { label: `mean time per publish at message ${EARLY_POSITION}`, value: earlyMean, unit: "µs" },
        compared({ label: `mean time per publish at message ${LATE_POSITION}`, value: round(pick("late", "meanMicros"), 1), unit: "µs" }, { label: `at ${EARLY_POSITION}`, value: earlyMean }),
        { label: `allocated bytes per publish at message ${EARLY_POSITION}`, value: earlyPages, unit: "B" },
        {
          ...compared({ label: `allocated bytes per publish at message ${LATE_POSITION}`, value: round(pick("late", "pageBytes"), 0), unit: "B" }, { label: `at ${EARLY_POSITION}`, value: earlyPages }),
          target: "ratio ≤ 1.3",
          isMet: pageRatio <= 1.3,
        },
        { label: `payload bytes per publish at message ${EARLY_POSITION}`, value: earlyPayload, unit: "B" },
        compared({ label: `payload bytes per publish at message ${LATE_POSITION}`, value: round(pick("late", "payloadBytes"), 0), unit: "B" }, { label: `at ${EARLY_POSITION}`, value: earlyPayload }),
      ],
      details: {
        batch: BATCH,
        repetitions: REPETITIONS,
        contentChars: PUBLISHED_CONTENT.length,
        note: "bytes from a read-only connection: (page_count − freelist_count) × page_size, and SUM(payload) FROM dbstat",
        runs: results.map((result) => ({ early: roundCost(result.early), late: roundCost(result.late) })),
      },
    };
  },
};

function roundCost(cost: BatchCost): BatchCost {
  return {
    medianMicros: round(cost.medianMicros, 1),
    meanMicros: round(cost.meanMicros, 1),
    pageBytes: round(cost.pageBytes, 0),
    payloadBytes: round(cost.payloadBytes, 0),
  };
}
