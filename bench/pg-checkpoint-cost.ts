import { join } from "node:path";
import pg from "pg";
import type { Store } from "../src/store/index.js";
import { createPostgresStore } from "../src/store/postgres/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { dropTestSchema, TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { newBenchSchemaName } from "./bench-database.js";
import { createTempDir, openSizeInspector } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { createGrowingThread, PUBLISHED_CONTENT } from "./growing-thread.js";
import { median, round } from "./statistics.js";

/*
 * checkpoint-cost's measurement (one publishMessage = message + checkpoint + thread stats in one
 * transaction, timed in a batch at message 10 and at message 10,000 of one thread) on PostgreSQL,
 * with SQLite measured the same way in the same run as the baseline.
 */

const BATCH = 200;
const EARLY_POSITION = 10;
const LATE_POSITION = 10_000;
const SQLITE_REPETITIONS = 3;
/** Growing a thread to 10,000 messages on PostgreSQL takes ~15 s on a loaded 2-CPU box: two threads at most. */
const PG_REPETITIONS = 2;
/** No further PostgreSQL repetition starts past this (the benchmark stays near a minute). */
const PG_BUDGET_MS = 35_000;
/** Young-thread and long-thread stretches alternate in this many rounds of PER_ROUND timed publishes each (BATCH per side). */
const ROUNDS = 8;
const PER_ROUND = BATCH / ROUNDS;

type StoreName = "sqlite" | "postgres";

/** A store on fresh storage, with a way to read how much storage it holds. */
interface OpenedStore {
  store: Store;
  /** Bytes the store's files hold now (SQLite: used pages; PostgreSQL: pg_total_relation_size of its tables). */
  bytes(): Promise<number>;
  close(): Promise<void>;
}

async function openSqlite(): Promise<OpenedStore> {
  const temp = createTempDir("pg-checkpoint-sqlite");
  const path = join(temp.dir, "checkpoint.db");
  const store = createSqliteStore({ path });
  const inspector = openSizeInspector(path);
  return {
    store,
    bytes: () => Promise.resolve(inspector.usedBytes()),
    async close() {
      inspector.close();
      await store.close();
      temp.remove();
    },
  };
}

async function openPostgres(): Promise<OpenedStore> {
  const schema = newBenchSchemaName();
  const store = await createPostgresStore({ url: TEST_PG_URL, schema });
  const inspector = new pg.Client({ connectionString: TEST_PG_URL });
  await inspector.connect();
  return {
    store,
    async bytes() {
      const { rows } = await inspector.query<{ bytes: string }>(
        `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = $1 AND c.relkind = 'r'`,
        [schema],
      );
      return Number(rows[0]!.bytes);
    },
    async close() {
      await inspector.end();
      await store.close();
      await dropTestSchema(schema);
    },
  };
}

const OPEN: Record<StoreName, () => Promise<OpenedStore>> = { sqlite: openSqlite, postgres: openPostgres };

interface BatchCost {
  medianMicros: number;
  meanMicros: number;
  /** Storage growth per publish (see OpenedStore.bytes). */
  bytes: number;
}

/** Publish times and storage growth, gathered over one or more timed stretches. */
class Sampler {
  readonly micros: number[] = [];
  #bytes = 0;

  /** Times `count` publishes one after another. */
  async add(publish: () => Promise<void>, opened: OpenedStore, count: number): Promise<void> {
    const before = await opened.bytes();
    for (let index = 0; index < count; index++) {
      const start = performance.now();
      await publish();
      this.micros.push((performance.now() - start) * 1000);
    }
    this.#bytes += (await opened.bytes()) - before;
  }

  cost(): BatchCost {
    return {
      medianMicros: median(this.micros),
      meanMicros: this.micros.reduce((sum, time) => sum + time, 0) / this.micros.length,
      bytes: this.#bytes / this.micros.length,
    };
  }
}

/**
 * On fresh storage (a new SQLite file / PostgreSQL schema): the long thread is measured at message
 * 10 (`freshStorage`: what a brand-new schema costs, cold), then grown to LATE_POSITION. Then
 * ROUNDS rounds, each with a young thread brought to message 10: PER_ROUND publishes timed on it
 * and PER_ROUND on the long thread, in alternating order. Young and long are thus measured in the
 * same moments: on PostgreSQL the cost of a publish drifts with time (it falls over the first few
 * hundred back-to-back publishes and rises again after an idle pause), which separate batches
 * minutes apart would pass off as a cost of the thread's length.
 */
async function repetition(name: StoreName): Promise<{ freshStorage: BatchCost; early: BatchCost; late: BatchCost; growthSeconds: number }> {
  const opened = await OPEN[name]();
  try {
    const { publish: long } = await createGrowingThread(opened.store);
    // The thread holds the user input at position 0; publish up to position EARLY_POSITION.
    for (let position = 1; position < EARLY_POSITION; position++) await long();
    const freshStorage = new Sampler();
    await freshStorage.add(long, opened, BATCH);
    const growthStart = performance.now();
    for (let position = EARLY_POSITION + BATCH; position < LATE_POSITION; position++) await long();
    const growthSeconds = (performance.now() - growthStart) / 1000;
    const early = new Sampler();
    const late = new Sampler();
    for (let round = 0; round < ROUNDS; round++) {
      const { publish: young } = await createGrowingThread(opened.store);
      for (let position = 1; position < EARLY_POSITION; position++) await young();
      const stretches: [() => Promise<void>, Sampler][] = [
        [young, early],
        [long, late],
      ];
      if (round % 2 === 1) stretches.reverse();
      for (const [publish, sampler] of stretches) await sampler.add(publish, opened, PER_ROUND);
    }
    return { freshStorage: freshStorage.cost(), early: early.cost(), late: late.cost(), growthSeconds };
  } finally {
    await opened.close();
  }
}

/** Publishes on a throwaway thread, so the first measured batch does not pay for the JIT (and PostgreSQL's plan caches). */
async function warmUp(name: StoreName, publishes: number): Promise<void> {
  const opened = await OPEN[name]();
  try {
    const { publish } = await createGrowingThread(opened.store);
    for (let index = 0; index < publishes; index++) await publish();
  } finally {
    await opened.close();
  }
}

type Repetition = Awaited<ReturnType<typeof repetition>>;

/** Time per publish + checkpoint at message 10 and 10,000 of one thread, PostgreSQL vs SQLite. */
export const pgCheckpointCost: Benchmark = {
  name: "pg-checkpoint-cost",
  summary: `publishMessage (message + checkpoint + thread stats, one tx) on PostgreSQL vs SQLite: ${BATCH} publishes at message ${EARLY_POSITION} vs at message ${LATE_POSITION.toLocaleString("en")}`,
  async run({ log }): Promise<BenchmarkResult> {
    const startedAt = performance.now();
    await warmUp("sqlite", 1_000);
    await warmUp("postgres", 300);
    const results: Record<StoreName, Repetition[]> = { sqlite: [], postgres: [] };
    for (let index = 0; index < SQLITE_REPETITIONS; index++) results.sqlite.push(await repetition("sqlite"));
    log(`pg-checkpoint-cost: SQLite, ${SQLITE_REPETITIONS} threads grown to ${LATE_POSITION.toLocaleString("en")}`);
    for (let index = 0; index < PG_REPETITIONS; index++) {
      if (index > 0 && performance.now() - startedAt > PG_BUDGET_MS) break;
      const result = await repetition("postgres");
      results.postgres.push(result);
      log(`pg-checkpoint-cost: PostgreSQL, thread ${index + 1} grown to ${LATE_POSITION.toLocaleString("en")} in ${round(result.growthSeconds, 1)} s`);
    }

    const pick = (name: StoreName, at: "freshStorage" | "early" | "late", field: keyof BatchCost) => median(results[name].map((result) => result[at][field]));
    const micros = (name: StoreName, at: "freshStorage" | "early" | "late") => round(pick(name, at, "medianMicros"), 1);
    const label = { sqlite: "SQLite", postgres: "PostgreSQL" } as const;
    const growth = (name: StoreName): Figure => {
      const ratio = micros(name, "late") / micros(name, "early");
      return {
        ...compared(
          { label: `${label[name]}: time per publish at message ${LATE_POSITION} (median)`, value: micros(name, "late"), unit: "µs" },
          { label: `at ${EARLY_POSITION}`, value: micros(name, "early") },
        ),
        target: "ratio ≤ 1.3",
        isMet: ratio <= 1.3,
      };
    };
    const runs = (name: StoreName) =>
      results[name].map((result) => ({
        freshStorage: roundCost(result.freshStorage),
        early: roundCost(result.early),
        late: roundCost(result.late),
        growthSeconds: round(result.growthSeconds, 1),
      }));
    return {
      figures: [
        { label: `PostgreSQL: time per publish at message ${EARLY_POSITION} (median)`, value: micros("postgres", "early"), unit: "µs" },
        growth("postgres"),
        { label: `SQLite: time per publish at message ${EARLY_POSITION} (median)`, value: micros("sqlite", "early"), unit: "µs" },
        growth("sqlite"),
        compared(
          { label: `PostgreSQL: time per publish at message ${EARLY_POSITION} in a new schema (first ${BATCH} publishes, cold)`, value: micros("postgres", "freshStorage"), unit: "µs" },
          { label: `young thread, warm`, value: micros("postgres", "early") },
        ),
        compared({ label: `PostgreSQL vs SQLite at message ${EARLY_POSITION}`, value: micros("postgres", "early"), unit: "µs" }, { label: "SQLite", value: micros("sqlite", "early") }),
        compared({ label: `PostgreSQL vs SQLite at message ${LATE_POSITION}`, value: micros("postgres", "late"), unit: "µs" }, { label: "SQLite", value: micros("sqlite", "late") }),
      ],
      details: {
        batch: BATCH,
        repetitions: { sqlite: results.sqlite.length, postgres: results.postgres.length },
        contentChars: PUBLISHED_CONTENT.length,
        method:
          "as checkpoint-cost: one run publishes message after message on one thread (complete: false), each publish timed in a batch of " +
          `${BATCH} at message ${EARLY_POSITION} and ${BATCH} at ${LATE_POSITION}, on fresh storage per repetition (SQLite file / PostgreSQL schema). ` +
          `The long thread is timed at message ${EARLY_POSITION} on the fresh storage (freshStorage, cold), then grown to ${LATE_POSITION}; then ${ROUNDS} rounds each bring a young thread to message ${EARLY_POSITION} ` +
          `and time ${PER_ROUND} publishes on it (messages ${EARLY_POSITION}–${EARLY_POSITION + PER_ROUND - 1}) and ${PER_ROUND} on the long thread, in alternating order, ` +
          "so that both positions are measured in the same moments (on PostgreSQL the cost drifts with time: it falls over the first few hundred back-to-back publishes and rises after an idle pause); " +
          "the thread is grown through the Store API one publish at a time (no bulk path exists: forkThread shares the lineage, it copies nothing). " +
          "PostgreSQL: the default pool, READ COMMITTED write transactions that lock the thread and run rows, loopback TCP; the server is shared with other work on the machine",
        bytesNote: "storage growth per publish: SQLite (page_count − freelist_count) × page_size; PostgreSQL SUM(pg_total_relation_size) over the schema's tables (heap + indexes + TOAST)",
        medianOfMeans: {
          sqlite: { freshStorage: round(pick("sqlite", "freshStorage", "meanMicros"), 1), early: round(pick("sqlite", "early", "meanMicros"), 1), late: round(pick("sqlite", "late", "meanMicros"), 1) },
          postgres: { freshStorage: round(pick("postgres", "freshStorage", "meanMicros"), 1), early: round(pick("postgres", "early", "meanMicros"), 1), late: round(pick("postgres", "late", "meanMicros"), 1) },
        },
        runs: { sqlite: runs("sqlite"), postgres: runs("postgres") },
      },
    };
  },
};

function roundCost(cost: BatchCost): BatchCost {
  return { medianMicros: round(cost.medianMicros, 1), meanMicros: round(cost.meanMicros, 1), bytes: round(cost.bytes, 0) };
}
