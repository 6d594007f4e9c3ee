import { availableParallelism, cpus } from "node:os";
import { join } from "node:path";
import { createId } from "../src/core/index.js";
import { TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { absoluteNow } from "./absolute-clock.js";
import { dropBenchSchema, newBenchSchemaName, withBenchDatabase } from "./bench-database.js";
import { createTempDir, mapLimited, requestJson, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult } from "./benchmark.js";
import { cpuSince, takeCpuSnapshot } from "./cpu-accounting.js";
import { openRunStream } from "./run-stream.js";
import { startServe, stopAndReport, type ChildReport, type ServeChild } from "./serve-child.js";
import { median, round, summarize } from "./statistics.js";

/** Runs per batch: each a fresh thread, 50 words at full speed. */
const RUNS = 300;
const WORDS = 50;
/** Runs in flight at once (each: POST run, then its SSE stream from the API process to the end). */
const CONCURRENCY = 32;
const WARMUP_RUNS = 100;
/** Batches by worker count, ABBA so that a drift over the run hits both alike. */
const ORDER: readonly (1 | 2)[] = [1, 2, 2, 1];
/** No batch starts once this much time has gone (setup included); a batch is at most BATCH_TIMEOUT_MS. */
const BUDGET_MS = 45_000;
const BATCH_TIMEOUT_MS = 30_000;
const DEMO_ENV = { TIDEMARK_DEMO_WORDS_PER_SECOND: "0", TIDEMARK_DEMO_WORDS: String(WORDS) };

interface Batch {
  workers: 1 | 2;
  seconds: number;
  runsPerSecond: number;
  deltasPerSecond: number;
  deltas: number;
  /** POST run → run.completed arrived on the SSE stream. */
  latencyMs: ReturnType<typeof summarize>;
  /** Runs each worker completed in this batch (its /metrics tidemark_runs_ended_total). */
  completedByWorker: number[];
  /** POST run answers 500 (retried by the client with the same run_id). */
  serverErrors: number;
  /** Runs whose terminal event was not run.completed. */
  notCompleted: number;
  /** Busy share of all CPUs during the batch (/proc/stat). */
  machineCpuBusy: number | undefined;
  /** CPU seconds spent during the batch, per process. */
  cpuSeconds: Record<string, number | undefined>;
}

/** A worker's `tidemark_runs_ended_total{outcome="completed"}`. */
async function completedRuns(worker: ServeChild): Promise<number> {
  const text = await (await fetch(`${worker.url}/metrics`)).text();
  const match = /^tidemark_runs_ended_total\{outcome="completed"\} (\d+)/m.exec(text);
  return match ? Number(match[1]) : 0;
}

const TERMINAL_EVENTS = new Set(["run.completed", "run.failed", "run.cancelled"]);

/** A POST run may answer 500 under concurrency (see `serverErrors`); the client retries it this often. */
const MAX_POST_RETRIES = 5;

/**
 * One run: POST it, read its stream from the API process until the end, count the deltas. The
 * client names the run (`run_id`), so a POST that answered 500 can be repeated safely.
 */
async function runToEnd(
  apiUrl: string,
  threadId: string,
  index: number,
): Promise<{ runId: string; deltas: number; latencyMs: number; serverErrors: string[]; notCompleted?: Record<string, unknown> }> {
  const startedAt = absoluteNow();
  const runId = createId("run");
  const serverErrors: string[] = [];
  for (;;) {
    const response = await fetch(`${apiUrl}/v1/threads/${threadId}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ run_id: runId, input: { role: "user", content: `Tell me about tides, please (${index}).` } }),
    });
    const text = await response.text();
    if (response.status === 201) break;
    if (response.status !== 500 || serverErrors.length >= MAX_POST_RETRIES) throw new Error(`POST run answered ${response.status}: ${text.slice(0, 300)}`);
    serverErrors.push(text.slice(0, 200));
  }
  const stream = openRunStream(`${apiUrl}/v1/runs/${runId}/events`);
  try {
    await withTimeout(stream.ended, BATCH_TIMEOUT_MS, `the end of ${runId}`);
  } finally {
    stream.close();
  }
  if (stream.lastType === undefined || !TERMINAL_EVENTS.has(stream.lastType)) throw new Error(`${runId}'s stream ended after ${JSON.stringify(stream.lastEvent)}`);
  // A run that ended otherwise is counted (and examined after the batches), not a reason to stop.
  const notCompleted = stream.lastType === "run.completed" ? undefined : stream.lastEvent;
  return { runId, deltas: stream.deltas, latencyMs: absoluteNow() - startedAt, serverErrors, notCompleted };
}

async function createThreads(apiUrl: string, count: number): Promise<string[]> {
  return mapLimited(Array.from({ length: count }), 16, async () => (await requestJson<{ thread_id: string }>("POST", `${apiUrl}/v1/threads`, {}, [201])).thread_id);
}

/** The first few 500 bodies, for the details. */
const firstServerErrors: string[] = [];
/** Runs (warm-up included) whose terminal event was not run.completed. */
const notCompleted: { runId: string; event: Record<string, unknown> }[] = [];

/** What the store says about the runs that did not complete: their failure and their traces (read before the schema is dropped). */
async function examineRuns(schema: string, runIds: readonly string[]): Promise<unknown[]> {
  if (runIds.length === 0) return [];
  return withBenchDatabase(async (client) => {
    const runs = await client.query<{ run_id: string; status: string; failure_reason: string | null; failure_message: string | null; attempt: string; started_at: string; ended_at: string }>(
      `SELECT run_id, status, failure_reason, failure_message, attempt, started_at, ended_at FROM ${schema}.runs WHERE run_id = ANY($1)`,
      [runIds],
    );
    const traces = await client.query<{ run_id: string; kind: string; data: string; at: string }>(
      `SELECT run_id, kind, data, at FROM ${schema}.traces WHERE run_id = ANY($1) ORDER BY at, seq`,
      [runIds],
    );
    const transitions = await client.query<{ run_id: string; from_status: string | null; to_status: string; at: string }>(
      `SELECT run_id, from_status, to_status, at FROM ${schema}.run_transitions WHERE run_id = ANY($1) ORDER BY run_id, ordinal`,
      [runIds],
    );
    return runs.rows.map((run) => ({
      ...run,
      transitions: transitions.rows.filter((row) => row.run_id === run.run_id).map((row) => `${row.from_status ?? "∅"}→${row.to_status}@${row.at}`),
      traces: traces.rows.filter((row) => row.run_id === run.run_id).map((row) => ({ kind: row.kind, at: row.at, data: row.data.slice(0, 2000) })),
    }));
  });
}

/** `count` runs with at most CONCURRENCY in flight; threads are created first, untimed. */
async function runBatch(api: ServeChild, workers: readonly ServeChild[], count: number): Promise<Omit<Batch, "workers">> {
  const threads = await createThreads(api.url, count);
  const completedBefore = await Promise.all(workers.map(completedRuns));
  const cpuBefore = takeCpuSnapshot([api, ...workers]);
  const start = absoluteNow();
  const results = await withTimeout(
    mapLimited(threads, CONCURRENCY, (threadId, index) => runToEnd(api.url, threadId, index)),
    BATCH_TIMEOUT_MS,
    `a batch of ${count} runs`,
  );
  const seconds = (absoluteNow() - start) / 1000;
  const cpu = cpuSince(cpuBefore, [api, ...workers]);
  const completedAfter = await Promise.all(workers.map(completedRuns));
  const deltas = results.reduce((sum, result) => sum + result.deltas, 0);
  const serverErrors = results.flatMap((result) => result.serverErrors);
  for (const result of results) if (result.notCompleted) notCompleted.push({ runId: result.runId, event: result.notCompleted });
  if (serverErrors.length > 0) firstServerErrors.push(...serverErrors.slice(0, 3 - firstServerErrors.length));
  return {
    serverErrors: serverErrors.length,
    notCompleted: results.filter((result) => result.notCompleted).length,
    seconds: round(seconds, 3),
    runsPerSecond: count / seconds,
    deltasPerSecond: deltas / seconds,
    deltas,
    latencyMs: summarize(results.map((result) => result.latencyMs)),
    completedByWorker: completedAfter.map((after, index) => after - completedBefore[index]!),
    ...cpu,
  };
}

/** Runs/s and deltas/s of a fixed batch with one worker process vs two, behind one API process. */
export const clusterThroughput: Benchmark = {
  name: "cluster-throughput",
  summary: `${RUNS} runs of ${WORDS} words (demo model at full speed), ${CONCURRENCY} in flight, through one API process (SSE to the end): runs/s and deltas/s with 1 worker process vs 2 (PostgreSQL)`,
  async run({ log }): Promise<BenchmarkResult> {
    const startedAt = performance.now();
    firstServerErrors.length = 0;
    notCompleted.length = 0;
    let examined: unknown[] = [];
    const note = (message: string) => log(`cluster-throughput: ${message}`);
    const temp = createTempDir("cluster-throughput");
    const schema = newBenchSchemaName();
    const database = { db: TEST_PG_URL, schema, outbox: join(temp.dir, "outbox.db"), env: DEMO_ENV };
    const children: ServeChild[] = [];
    const childReports: ChildReport[] = [];
    const stop = async (child: ServeChild) => {
      children.splice(children.indexOf(child), 1);
      childReports.push(await stopAndReport(child, note));
    };
    const batches: Batch[] = [];
    let skipped = 0;
    try {
      const api = await startServe({ name: "api", role: "api", ...database });
      children.push(api);
      const workerA = await startServe({ name: "worker A", role: "worker", ...database });
      children.push(workerA);
      let workerB: ServeChild | undefined;
      await runBatch(api, [workerA], WARMUP_RUNS);
      for (const workers of ORDER) {
        if (performance.now() - startedAt > BUDGET_MS) {
          skipped++;
          continue;
        }
        if (workers === 2 && !workerB) {
          workerB = await startServe({ name: "worker B", role: "worker", ...database });
          children.push(workerB);
          // Its JIT is cold: a few runs first, so the 2-worker batch does not pay for it.
          await runBatch(api, [workerA, workerB], WARMUP_RUNS);
        } else if (workers === 1 && workerB) {
          await stop(workerB);
          workerB = undefined;
        }
        const batch = await runBatch(api, workerB ? [workerA, workerB] : [workerA], RUNS);
        batches.push({ workers, ...batch });
        log(`cluster-throughput: ${workers} worker(s): ${RUNS} runs in ${batch.seconds} s (${round(batch.runsPerSecond, 1)} runs/s, split ${batch.completedByWorker.join("/")})`);
      }
    } finally {
      for (const child of [...children].reverse()) await stop(child);
      examined = await examineRuns(schema, notCompleted.slice(0, 20).map((run) => run.runId)).catch((error: unknown) => [`could not read them: ${String(error)}`]);
      for (const run of examined) log(`cluster-throughput: run not completed: ${JSON.stringify(run).slice(0, 1500)}`);
      await dropBenchSchema(schema, note);
      temp.remove();
    }

    const of = (workers: 1 | 2, field: "runsPerSecond" | "deltasPerSecond") => median(batches.filter((batch) => batch.workers === workers).map((batch) => batch[field]));
    const latencyP50 = (workers: 1 | 2) => median(batches.filter((batch) => batch.workers === workers).map((batch) => batch.latencyMs.p50));
    const busy = (workers: 1 | 2) => median(batches.filter((batch) => batch.workers === workers).map((batch) => batch.machineCpuBusy ?? Number.NaN));
    const cpuCount = availableParallelism();
    const runs1 = round(of(1, "runsPerSecond"), 1);
    const deltas1 = round(of(1, "deltasPerSecond"), 0);
    return {
      figures: [
        { label: `runs/s, 1 worker (median of ${batches.filter((batch) => batch.workers === 1).length} batches)`, value: runs1, unit: "runs/s" },
        compared({ label: `runs/s, 2 workers (median of ${batches.filter((batch) => batch.workers === 2).length} batches)`, value: round(of(2, "runsPerSecond"), 1), unit: "runs/s" }, { label: "1 worker", value: runs1 }),
        { label: "deltas/s, 1 worker", value: deltas1, unit: "deltas/s" },
        compared({ label: "deltas/s, 2 workers", value: round(of(2, "deltasPerSecond"), 0), unit: "deltas/s" }, { label: "1 worker", value: deltas1 }),
        compared({ label: "run latency p50 (POST → run.completed on SSE), 2 workers", value: round(latencyP50(2), 1), unit: "ms" }, { label: "1 worker", value: round(latencyP50(1), 1) }),
        compared({ label: "machine CPU busy during the batch, 2 workers", value: round(busy(2) * 100, 0), unit: "%" }, { label: "1 worker", value: round(busy(1) * 100, 0) }),
        {
          label: `runs that did not end with run.completed (in ${batches.length} measured batches of ${RUNS})`,
          value: batches.reduce((sum, batch) => sum + batch.notCompleted, 0),
          unit: "runs",
          target: "0",
          isMet: batches.every((batch) => batch.notCompleted === 0),
        },
        {
          label: `POST run answered 500 (in ${batches.length} measured batches of ${RUNS}; the client retried with the same run_id)`,
          value: batches.reduce((sum, batch) => sum + batch.serverErrors, 0),
          unit: "responses",
          target: "0",
          isMet: batches.every((batch) => batch.serverErrors === 0),
        },
        { label: "CPUs available to this machine (bench client, API, workers and PostgreSQL share them)", value: cpuCount, unit: "CPUs" },
      ],
      details: {
        runs: RUNS,
        words: WORDS,
        concurrency: CONCURRENCY,
        warmupRuns: WARMUP_RUNS,
        order: ORDER,
        batchesSkippedForTime: skipped,
        firstServerErrors,
        notCompleted: { terminalEvents: notCompleted.slice(0, 20), store: examined },
        demoModel: DEMO_ENV,
        cpus: { availableParallelism: cpuCount, model: cpus()[0]?.model ?? "unknown" },
        note:
          cpuCount < 5
            ? `${cpuCount} CPUs for the bench client, one API process, up to two workers and PostgreSQL: a second worker adds no CPU, so a ratio near 1 says nothing about scaling (it needs ≥ 5 CPUs to show).`
            : "a ratio near 2 means the workers scale; below it, the API process or PostgreSQL is the limit (see cpuSeconds).",
        method:
          "one schema, one API process (CLI, --role api), worker A (CLI, --role worker) throughout, worker B started before the first 2-worker batch " +
          `(then ${WARMUP_RUNS} warm-up runs) and drained (SIGTERM) before the next 1-worker batch; each batch creates its threads first (untimed), ` +
          "then times first POST → last run.completed on the SSE streams; deltas are the message.delta events the client received",
        batches: batches.map((batch) => ({
          ...batch,
          runsPerSecond: round(batch.runsPerSecond, 1),
          deltasPerSecond: round(batch.deltasPerSecond, 0),
        })),
        children: childReports,
      },
    };
  },
};
