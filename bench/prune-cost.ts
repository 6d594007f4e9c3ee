import { copyFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createId, RETENTION_LAYERS, systemClock, systemTimers, type RetentionLayer } from "../src/core/index.js";
import { createDemoModel, createRuntime, DEFAULT_PRUNE_BATCH_SIZE, RetentionPruner, silentLogger, type Runtime } from "../src/runtime/index.js";
import { startTidemark, type Tidemark } from "../src/start-tidemark.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { commitThroughLedger, createTempDir, requestJson, startClaimedRun, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { createAbortProbe, startStreamingRun } from "./cancel-latency.js";
import { consumeSse } from "./consume-sse.js";
import { median, round, summarize } from "./statistics.js";

/**
 * prune-cost (issue 19): how fast the retention pruner expires rows, layer by layer, and what a
 * pruner catching up with a large backlog costs the hot path while it runs: the stream path
 * (deltas per second and CPU per delta, over HTTP, as `stream-path` measures it) and the Stop
 * (`cancelRun()` → accepted, as `cancel-latency` measures it), each with and without the
 * server's pruner working through the backlog in the same process, on the same SQLite file.
 * The throughput is the store's own pace (batch after batch, no pauses); the server's pruner
 * paces itself to a share of the event loop (`PRUNE_LOOP_SHARE`).
 */

const TENANT = "bench";
/** Real runs whose traces and run detail seed the backlog. */
const SEED_RUNS = 300;
/** Ledger operations (prepared, committed) seeded through the store. */
const SEED_OPERATIONS = 3_000;
/** Trace rows after the seeded ones are multiplied: a backlog a pruner takes seconds to clear. */
const TRACE_ROWS = 200_000;
/** The batch of the throughput measure (the server's default). */
const BATCH = DEFAULT_PRUNE_BATCH_SIZE;
const STREAM_WORDS = 20_000;
const CANCELS_PER_PHASE = 30;
const REPETITIONS = 4;
const PROMPT = "Stream as fast as you can.";

type Mode = "idle" | "pruning";

/** A template database with an expired backlog in every layer it can seed, and how many rows each has. */
async function seedTemplate(dir: string, log: (message: string) => void): Promise<string> {
  const path = join(dir, "template.db");
  const store = createSqliteStore({ path });
  const runtime = createRuntime({ store, model: createDemoModel({ wordsPerSecond: 0, wordCount: 40 }), logger: silentLogger });
  await runtime.start();
  try {
    for (let index = 0; index < SEED_RUNS; index++) {
      const thread = await runtime.createThread(TENANT);
      const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: `seed ${index}` } });
      const final = await runtime.waitForTerminal(TENANT, run.runId, 10_000);
      if (final?.status !== "completed") throw new Error(`seed run ended ${final?.status}`);
    }
    await seedOperations(store);
  } finally {
    await runtime.close();
    await store.close();
  }
  multiplyTraces(path, TRACE_ROWS);
  log(`prune-cost: template seeded (${SEED_RUNS} runs, ${SEED_OPERATIONS} operations, ${TRACE_ROWS.toLocaleString("en")} traces)`);
  return path;
}

async function seedOperations(store: Store): Promise<void> {
  const thread = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: Date.now() });
  const runId = (await startClaimedRun(store, TENANT, thread.threadId, "operations")).runId;
  for (let index = 0; index < SEED_OPERATIONS; index++) {
    const action = { tenantId: TENANT, threadId: thread.threadId, runId, toolCallId: `call_${index}`, idempotencyKey: `seed-${index}`, input: { to: "someone@example.com", body: "x".repeat(200) } };
    await commitThroughLedger(store, action, async () => ({ sent: true }));
  }
}

/** Copies the seeded trace rows (new ids, same contents) until the table holds `target` rows. */
function multiplyTraces(path: string, target: number): void {
  const db = new Database(path);
  try {
    const columns = (db.prepare("PRAGMA table_info(traces)").all() as { name: string }[]).map((column) => column.name);
    const selected = columns.map((name) => (name === "trace_id" ? `trace_id || '_' || @copy` : name)).join(", ");
    const copy = db.prepare(`INSERT INTO traces (${columns.join(", ")}) SELECT ${selected} FROM traces LIMIT @limit`);
    const count = () => (db.prepare("SELECT COUNT(*) AS n FROM traces").get() as { n: number }).n;
    for (let round = 1; count() < target; round++) copy.run({ copy: round, limit: target - count() });
  } finally {
    db.close();
  }
}

/** One batch of one layer, everything older than now expired. */
function pruneBatch(store: Store, layer: RetentionLayer): Promise<number> {
  const now = Date.now();
  return store.pruneExpired({ layer, before: now + 1, limit: BATCH, createCheckpointId: () => createId("cp"), now });
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Prune throughput per layer on a fresh copy of the template: rows and seconds until none is left. */
async function measureThroughput(template: string, dir: string): Promise<Map<RetentionLayer, { rows: number; seconds: number }>> {
  const path = join(dir, "throughput.db");
  copyFileSync(template, path);
  const store = createSqliteStore({ path });
  const results = new Map<RetentionLayer, { rows: number; seconds: number }>();
  try {
    for (const layer of RETENTION_LAYERS) {
      let rows = 0;
      const startedAt = performance.now();
      for (;;) {
        const pruned = await pruneBatch(store, layer);
        rows += pruned;
        if (pruned < BATCH) break;
        await nextTurn();
      }
      results.set(layer, { rows, seconds: (performance.now() - startedAt) / 1000 });
    }
  } finally {
    await store.close();
  }
  return results;
}

/**
 * The server's own pruner (`RetentionPruner`, its default batch and pacing) sweeping the traces
 * backlog (a trace TTL of 0: everything written is expired), until stopped.
 */
function startBacklogPruner(store: Store): { stop(): Promise<{ rows: number; isStillBusy: boolean }> } {
  const pruner = new RetentionPruner({
    store,
    clock: systemClock,
    timers: systemTimers,
    logger: silentLogger,
    settings: { traceTtlMs: 0, runDetailTtlMs: Number.POSITIVE_INFINITY, fragmentTtlMs: Number.POSITIVE_INFINITY, operationTtlMs: Number.POSITIVE_INFINITY },
  });
  let isStillBusy = true;
  const sweep = pruner.pruneOnce().then((counts) => {
    isStillBusy = false;
    return counts;
  });
  return {
    async stop() {
      const wasBusy = isStillBusy;
      await pruner.stop();
      return { rows: (await sweep).traces, isStillBusy: wasBusy };
    },
  };
}

interface PhaseSample {
  deltasPerSecond: number;
  cpuMicrosPerDelta: number;
  acceptedMs: number[];
  prunedRows: number;
  /** Rows the pruner expired per second of the phase (its paced rate while runs are served). */
  prunedPerSecond: number;
  isPrunerStillBusy: boolean;
}

/** One stream over HTTP (thread + run created, events read to the end) on a started server. */
async function streamOnce(tidemark: Tidemark): Promise<{ deltasPerSecond: number; cpuMicrosPerDelta: number }> {
  const post = (path: string, body: unknown) => requestJson<Record<string, unknown>>("POST", `${tidemark.url}${path}`, body, [201]);
  const startedAt = performance.now();
  const cpu = process.cpuUsage();
  const thread = await post("/v1/threads", {});
  const run = await post(`/v1/threads/${String(thread.thread_id)}/runs`, { input: { role: "user", content: PROMPT } });
  const consumption = await consumeSse(`${tidemark.url}/v1/runs/${String(run.run_id)}/events`);
  const used = process.cpuUsage(cpu);
  if (consumption.deltas !== STREAM_WORDS || consumption.lastType !== "run.completed") {
    throw new Error(`the stream delivered ${consumption.deltas} deltas and ended with ${consumption.lastType}`);
  }
  return { deltasPerSecond: (consumption.deltas / (consumption.endedAt - startedAt)) * 1000, cpuMicrosPerDelta: (used.user + used.system) / consumption.deltas };
}

/** Stops of runs streaming on `runtime`: cancelRun() → accepted, in ms. */
async function cancelsOn(runtime: Runtime, nextGeneration: Parameters<typeof startStreamingRun>[2]): Promise<number[]> {
  const samples: number[] = [];
  for (let index = 0; index < CANCELS_PER_PHASE; index++) {
    const { run, watch } = await startStreamingRun(runtime, TENANT, nextGeneration);
    const calledAt = performance.now();
    const result = await runtime.cancelRun(TENANT, run.runId, "bench");
    samples.push(performance.now() - calledAt);
    if (result.kind !== "accepted") throw new Error(`cancel answered ${result.kind}`);
    await withTimeout(watch.terminal, 5_000, "run.cancelled");
    watch.unsubscribe();
  }
  return samples;
}

/** One phase on a fresh copy of the template: the stream, then the Stops, with or without the backlog pruner. */
async function phase(template: string, dir: string, mode: Mode, index: number): Promise<PhaseSample> {
  const path = join(dir, `phase-${index}-${mode}.db`);
  copyFileSync(template, path);
  const streaming = await startTidemark({ dbPath: path, port: 0, model: createDemoModel({ wordsPerSecond: 0, wordCount: STREAM_WORDS }), logger: silentLogger });
  const probe = createAbortProbe(createDemoModel({ wordsPerSecond: 200 }));
  // The Stops' runtime shares the server's store (one SQLite writer, as in the server).
  const stopping = createRuntime({ store: streaming.store, model: probe.model, logger: silentLogger });
  await stopping.start();
  try {
    await streamOnce(streaming);
    const prunerStartedAt = performance.now();
    const pruner = mode === "pruning" ? startBacklogPruner(streaming.store) : undefined;
    const stream = await streamOnce(streaming);
    const acceptedMs = await cancelsOn(stopping, probe.nextGeneration);
    const pruned = (await pruner?.stop()) ?? { rows: 0, isStillBusy: false };
    const seconds = (performance.now() - prunerStartedAt) / 1000;
    return { ...stream, acceptedMs, prunedRows: pruned.rows, prunedPerSecond: pruned.rows / seconds, isPrunerStillBusy: pruned.isStillBusy };
  } finally {
    await stopping.close();
    await streaming.close();
  }
}

export const pruneCost: Benchmark = {
  name: "prune-cost",
  summary: `prune throughput per layer (rows/s, batches of ${BATCH}) and, while a pruner works through ${TRACE_ROWS.toLocaleString("en")} expired traces, the stream path (${STREAM_WORDS.toLocaleString("en")} deltas over HTTP) and cancelRun() → accepted against the same without it`,
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("prune");
    try {
      const template = await seedTemplate(temp.dir, log);
      const throughput = await measureThroughput(template, temp.dir);
      log("prune-cost: throughput measured");
      const samples: Record<Mode, PhaseSample[]> = { idle: [], pruning: [] };
      for (let index = 0; index < REPETITIONS; index++) {
        // Alternate which mode goes first, so drift in the machine's load hits both alike.
        const order: Mode[] = index % 2 === 0 ? ["idle", "pruning"] : ["pruning", "idle"];
        for (const mode of order) samples[mode].push(await phase(template, temp.dir, mode, index));
        log(`prune-cost: repetition ${index + 1}/${REPETITIONS}`);
      }
      return { figures: [...throughputFigures(throughput), ...effectFigures(samples)], details: { throughput: Object.fromEntries(throughput), samples } };
    } finally {
      temp.remove();
    }
  },
};

function throughputFigures(throughput: Map<RetentionLayer, { rows: number; seconds: number }>): Figure[] {
  const figures: Figure[] = [];
  for (const [layer, { rows, seconds }] of throughput) {
    if (rows === 0) continue;
    figures.push({ label: `prune ${layer}: ${rows.toLocaleString("en")} rows`, value: round(rows / seconds, 0), unit: "rows/s" });
  }
  return figures;
}

function effectFigures(samples: Record<Mode, PhaseSample[]>): Figure[] {
  const idle = samples.idle;
  const pruning = samples.pruning;
  const stillBusy = pruning.filter((sample) => sample.isPrunerStillBusy).length;
  const deltas = { label: "idle deltas/s (median)", value: round(median(idle.map((sample) => sample.deltasPerSecond)), 0) };
  const cpu = { label: "idle CPU/delta (median)", value: round(median(idle.map((sample) => sample.cpuMicrosPerDelta)), 2) };
  const accepted = summarize(idle.flatMap((sample) => sample.acceptedMs));
  const acceptedPruning = summarize(pruning.flatMap((sample) => sample.acceptedMs));
  // Slower is worse: deltas/s is compared as idle ÷ pruning, so every ratio reads "cost while pruning".
  const deltasWhilePruning = round(median(pruning.map((sample) => sample.deltasPerSecond)), 0);
  return [
    { label: "stream path while pruning: deltas/s (median)", value: deltasWhilePruning, unit: "/s", baseline: deltas, ratio: round(deltasWhilePruning / deltas.value, 3), target: "≥ 0.95× idle", isMet: deltasWhilePruning >= 0.95 * deltas.value },
    { ...compared({ label: "stream path while pruning: CPU per delta (median)", value: round(median(pruning.map((sample) => sample.cpuMicrosPerDelta)), 2), unit: "µs" }, cpu), target: "≤ 1.05× idle" },
    compared({ label: "cancelRun() → accepted while pruning, p50", value: round(acceptedPruning.p50, 3), unit: "ms" }, { label: "idle p50", value: round(accepted.p50, 3) }),
    compared({ label: "cancelRun() → accepted while pruning, p99", value: round(acceptedPruning.p99, 3), unit: "ms" }, { label: "idle p99", value: round(accepted.p99, 3) }),
    { label: "the server's pruner while serving (paced): rows/s (median)", value: round(median(pruning.map((sample) => sample.prunedPerSecond)), 0), unit: "rows/s" },
    { label: "pruning phases whose pruner was still busy at the phase's end", value: stillBusy, unit: `of ${pruning.length}`, target: `${pruning.length} of ${pruning.length}`, isMet: stillBusy === pruning.length },
  ];
}
