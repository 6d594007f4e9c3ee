import { join } from "node:path";
import type { RunEventBuffer } from "../src/stream/index.js";
import { createDemoModel, createRuntime, silentLogger, type ChatModel, type Runtime } from "../src/runtime/index.js";
import { LOCAL_TENANT } from "../src/server/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { createTempDir, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult } from "./benchmark.js";
import { median, percentile, round, summarize } from "./statistics.js";

const TENANT = "bench";
const WARMUP_RUNS = 20;
const MEASURED_RUNS = 300;
const HTTP_RUNS = 60;
/** Deltas a run has streamed before Stop is pressed. */
const DELTAS_BEFORE_CANCEL = 3;
const WAIT_MS = 5_000;

/** One generation the model was asked for: when it started and when its signal aborted. */
export interface Generation {
  startedAt: number;
  abortedAt: number | undefined;
}

/** Wraps a model so that each `stream()` call records `performance.now()` when its signal aborts. */
export function createAbortProbe(inner: ChatModel): { model: ChatModel; nextGeneration(): Promise<Generation> } {
  let waiter: ((generation: Generation) => void) | undefined;
  const model: ChatModel = {
    id: inner.id,
    stream(request, options) {
      const generation: Generation = { startedAt: performance.now(), abortedAt: undefined };
      options.signal.addEventListener(
        "abort",
        () => {
          generation.abortedAt = performance.now();
        },
        { once: true },
      );
      waiter?.(generation);
      waiter = undefined;
      return inner.stream(request, options);
    },
    title: (message, options) => inner.title?.(message, options) ?? Promise.resolve("bench"),
  };
  return {
    model,
    nextGeneration: () => new Promise<Generation>((resolve) => (waiter = resolve)),
  };
}

/** Watches a run's buffer: resolves once `count` deltas are in it, and stamps the terminal event. */
export function watchBuffer(buffer: RunEventBuffer, count: number) {
  let deltas = 0;
  for (let seq = buffer.firstSeq; seq <= buffer.lastSeq; seq++) if (buffer.typeAt(seq) === "message.delta") deltas++;
  let onDeltas: (() => void) | undefined;
  let onTerminal: ((at: number) => void) | undefined;
  const deltasArrived = new Promise<void>((resolve) => (onDeltas = resolve));
  const terminal = new Promise<number>((resolve) => (onTerminal = resolve));
  const check = (): void => {
    if (deltas >= count) onDeltas?.();
    // buffer.subscribe fires synchronously inside append, so this is the append time.
    if (buffer.terminalEvent) onTerminal?.(performance.now());
  };
  const unsubscribe = buffer.subscribe(() => {
    if (buffer.typeAt(buffer.lastSeq) === "message.delta") deltas++;
    check();
  });
  check();
  return { deltasArrived, terminal, unsubscribe, terminalType: () => buffer.terminalEvent?.type };
}

/** Starts a run on a fresh thread and waits until it has streamed a few deltas. */
export async function startStreamingRun(runtime: Runtime, tenantId: string, nextGeneration: () => Promise<Generation>) {
  const thread = await runtime.createThread(tenantId);
  const started = nextGeneration();
  const { run } = await runtime.startRun({
    tenantId,
    threadId: thread.threadId,
    input: { role: "user", content: "Please write a long answer so that I can press Stop." },
  });
  // The model is called after run.started was appended, so the buffer exists by then.
  const generation = await withTimeout(started, 5_000, "the generation to start");
  const buffer = runtime.hub.get(tenantId, run.runId);
  if (!buffer) throw new Error(`no event buffer for ${run.runId}`);
  const watch = watchBuffer(buffer, DELTAS_BEFORE_CANCEL);
  await withTimeout(watch.deltasArrived, 5_000, "the first deltas");
  return { run, generation, watch };
}

/** In process: accepted → signal aborted, accepted → run.cancelled appended. */
async function measureInProcess(log: (message: string) => void) {
  const temp = createTempDir("cancel");
  const store = createSqliteStore({ path: join(temp.dir, "cancel.db") });
  const probe = createAbortProbe(createDemoModel({ wordsPerSecond: 200 }));
  let acceptedAt: number | undefined;
  const runtime = createRuntime({
    store,
    model: probe.model,
    logger: silentLogger,
    observer: {
      onCancelAccepted: () => {
        acceptedAt = performance.now();
      },
    },
  });
  await runtime.start();
  const toSignal: number[] = [];
  const toCancelled: number[] = [];
  const toAccepted: number[] = [];
  try {
    for (let index = 0; index < WARMUP_RUNS + MEASURED_RUNS; index++) {
      const { run, generation, watch } = await startStreamingRun(runtime, TENANT, probe.nextGeneration);
      acceptedAt = undefined;
      const calledAt = performance.now();
      const result = await runtime.cancelRun(TENANT, run.runId, "bench");
      if (result.kind !== "accepted") throw new Error(`cancel answered ${result.kind}`);
      const terminalAt = await withTimeout(watch.terminal, 5_000, "run.cancelled");
      watch.unsubscribe();
      if (watch.terminalType() !== "run.cancelled") throw new Error(`run ended with ${watch.terminalType()}`);
      if (acceptedAt === undefined || generation.abortedAt === undefined) throw new Error("a timestamp is missing");
      if (index < WARMUP_RUNS) continue;
      // The runtime aborts the work first and commits the cancel in the same breath, so both
      // figures are timed from the request, which is stricter than from the commit.
      toAccepted.push(acceptedAt - calledAt);
      toSignal.push(generation.abortedAt - calledAt);
      toCancelled.push(terminalAt - calledAt);
    }
    log(`cancel-latency: ${MEASURED_RUNS} in-process runs measured`);
  } finally {
    await runtime.close();
    await store.close();
    temp.remove();
  }
  return { toAccepted, toSignal, toCancelled };
}

/** Over HTTP: the POST /cancel round trip (plain, and ?wait= until terminal), with GET /runs/{id} as baseline. */
async function measureHttp(log: (message: string) => void) {
  const temp = createTempDir("cancel-http");
  const probe = createAbortProbe(createDemoModel({ wordsPerSecond: 200 }));
  const tidemark = await startTidemark({ dbPath: join(temp.dir, "cancel-http.db"), port: 0, model: probe.model, logger: silentLogger });
  const getRun: number[] = [];
  const cancel: number[] = [];
  const cancelWait: number[] = [];
  const timed = async (url: string, init?: RequestInit): Promise<{ ms: number; status: number; body: unknown }> => {
    const start = performance.now();
    const response = await fetch(url, init);
    const body: unknown = await response.json();
    return { ms: performance.now() - start, status: response.status, body };
  };
  try {
    for (let index = 0; index < 2 * HTTP_RUNS + 4; index++) {
      const { run, watch } = await startStreamingRun(tidemark.runtime, LOCAL_TENANT, probe.nextGeneration);
      const runUrl = `${tidemark.url}/v1/runs/${run.runId}`;
      const read = await timed(runUrl);
      const isWait = index % 2 === 1;
      const stop = await timed(`${runUrl}/cancel${isWait ? `?wait=${WAIT_MS}` : ""}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ reason: "bench" }),
      });
      await withTimeout(watch.terminal, 5_000, "run.cancelled");
      watch.unsubscribe();
      const status = (stop.body as { status?: string }).status;
      if (read.status !== 200 || stop.status !== (isWait ? 200 : 202) || status !== (isWait ? "cancelled" : "cancel_requested")) {
        throw new Error(`unexpected answers: GET ${read.status}, cancel ${stop.status} ${status}`);
      }
      if (index < 4) continue;
      getRun.push(read.ms);
      (isWait ? cancelWait : cancel).push(stop.ms);
    }
    log(`cancel-latency: ${2 * HTTP_RUNS} HTTP runs measured`);
  } finally {
    await tidemark.close();
    temp.remove();
  }
  return { getRun, cancel, cancelWait };
}

/** Stop → the generation's signal aborted, and → `run.cancelled` appended; plus the HTTP round trip. */
export const cancelLatency: Benchmark = {
  name: "cancel-latency",
  summary: "cancel requested (runtime.cancelRun called) → generation AbortSignal aborted / run.cancelled appended, in process; POST /cancel round trip",
  async run({ log }): Promise<BenchmarkResult> {
    const inProcess = await measureInProcess(log);
    const http = await measureHttp(log);
    const getBaseline = { label: "GET /v1/runs/{id} p50", value: round(median(http.getRun)) };
    return {
      figures: [
        { label: "cancel requested → signal aborted p50", value: round(percentile(inProcess.toSignal, 50)), unit: "ms" },
        { label: "cancel requested → signal aborted p99", value: round(percentile(inProcess.toSignal, 99)), unit: "ms", target: "≤ 5 ms", isMet: percentile(inProcess.toSignal, 99) <= 5 },
        { label: "cancel requested → run.cancelled p50", value: round(percentile(inProcess.toCancelled, 50)), unit: "ms" },
        { label: "cancel requested → run.cancelled p99", value: round(percentile(inProcess.toCancelled, 99)), unit: "ms", target: "≤ 20 ms", isMet: percentile(inProcess.toCancelled, 99) <= 20 },
        { label: "cancelRun() → accepted (store tx) p50", value: round(percentile(inProcess.toAccepted, 50)), unit: "ms" },
        compared({ label: "POST /cancel round trip p50", value: round(median(http.cancel)), unit: "ms" }, getBaseline),
        compared({ label: "POST /cancel?wait= round trip p50", value: round(median(http.cancelWait)), unit: "ms" }, getBaseline),
        { label: "POST /cancel?wait= round trip p99", value: round(percentile(http.cancelWait, 99)), unit: "ms" },
      ],
      details: {
        runs: { warmup: WARMUP_RUNS, measured: MEASURED_RUNS, http: 2 * HTTP_RUNS, deltasBeforeCancel: DELTAS_BEFORE_CANCEL },
        model: "createDemoModel({ wordsPerSecond: 200 }) behind an abort probe",
        requestedToSignalMs: summarize(inProcess.toSignal),
        requestedToCancelledMs: summarize(inProcess.toCancelled),
        cancelCallToAcceptedMs: summarize(inProcess.toAccepted),
        httpGetRunMs: summarize(http.getRun),
        httpCancelMs: summarize(http.cancel),
        httpCancelWaitMs: summarize(http.cancelWait),
      },
    };
  },
};
