/**
 * `limits-tracing-cost` (issue 17, "Benchmarks"): what the limits and the tracing cost on the hot
 * path, measured in one run against the same path without them. The workloads are those of
 * `stream-path` (deltas at full speed, server and client in this process) and `cancel-latency`'s
 * HTTP half (`POST /cancel` of a streaming run), each through three servers side by side:
 *
 * - `bare`: every limit off (run and stream limits `Infinity`, so nothing is counted; the rate
 *   limit at 0) and no OpenTelemetry SDK (the API's no-op tracer);
 * - `limits`: the default limits (`DEFAULT_RUN_LIMITS`, 1,000 requests a second), no SDK;
 * - `limits+sdk`: the default limits, with the SDK registered (`BasicTracerProvider`, a
 *   `BatchSpanProcessor` and an exporter that drops what it is given: the SDK's whole cost but the
 *   network's).
 *
 * All three have an API key (the rate limit applies only with keys), so authentication costs the
 * same in each. The variants are interleaved repetition by repetition, in a rotating order, so
 * the machine's drift hits all alike.
 */
import { join } from "node:path";
import { trace } from "@opentelemetry/api";
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { createDemoModel, silentLogger, type RunLimits } from "../src/runtime/index.js";
import { startTidemark, type Tidemark } from "../src/start-tidemark.js";
import { createTempDir, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { createAbortProbe, startStreamingRun } from "./cancel-latency.js";
import { consumeSse } from "./consume-sse.js";
import { median, percentile, round, summarize } from "./statistics.js";

const KEY = "bench-key";
const TENANT = "bench";
const AUTH = { authorization: `Bearer ${KEY}` };
/** Deltas per stream repetition, and repetitions per variant (after one unmeasured each). */
const WORDS = 20_000;
const STREAM_REPETITIONS = 9;
/** Stops per variant (after the warm-up ones). */
const WARMUP_STOPS = 10;
const MEASURED_STOPS = 150;

const NO_LIMITS: RunLimits = {
  maxActiveRunsPerTenant: Infinity,
  maxQueuedRunsPerTenant: Infinity,
  maxInputChars: Infinity,
  maxStreamsPerTenant: Infinity,
  maxStreamsPerRun: Infinity,
};

type VariantName = "bare" | "limits" | "limits+sdk";

interface Variant {
  name: VariantName;
  hasSdk: boolean;
  stream: Tidemark;
  cancel: Tidemark;
  probe: ReturnType<typeof createAbortProbe>;
}

interface StreamSample {
  cpuMicrosPerDelta: number;
  deltasPerSecond: number;
}

interface StopSample {
  /** `POST /cancel` sent → its answer read. */
  roundTripMs: number;
  /** `POST /cancel` sent → the generation's signal aborted. */
  toSignalMs: number;
  /** `POST /cancel` sent → `run.cancelled` appended to the run's buffer. */
  toCancelledMs: number;
  /** This process's CPU (server and client) from just before the `POST` to `run.cancelled` appended. */
  cpuMicros: number;
}

/** An exporter that drops every span: the SDK's cost without a collector's. */
const droppingExporter: SpanExporter = {
  export: (_spans: ReadableSpan[], done) => done({ code: 0 }),
  shutdown: () => Promise.resolve(),
};

/** Runs `work` with the SDK registered as the global tracer provider (and unregistered after). */
async function withTracing<T>(provider: BasicTracerProvider | undefined, work: () => Promise<T>): Promise<T> {
  if (!provider) return work();
  trace.setGlobalTracerProvider(provider);
  try {
    return await work();
  } finally {
    trace.disable();
  }
}

async function startVariant(name: VariantName, dir: string): Promise<Variant> {
  const options = {
    port: 0,
    logger: silentLogger,
    apiKeys: new Map([[KEY, TENANT]]),
    ...(name === "bare" ? { limits: NO_LIMITS, rateLimit: { requestsPerSecond: 0, burst: 0 } } : {}),
  };
  const probe = createAbortProbe(createDemoModel({ wordsPerSecond: 200 }));
  const stream = await startTidemark({ ...options, dbPath: join(dir, `${name}-stream.db`), model: createDemoModel({ wordsPerSecond: 0, wordCount: WORDS }) });
  const cancel = await startTidemark({ ...options, dbPath: join(dir, `${name}-cancel.db`), model: probe.model });
  return { name, hasSdk: name === "limits+sdk", stream, cancel, probe };
}

/** One stream: a thread and a run created over HTTP, then its events read to the end. */
async function streamRepetition(tidemark: Tidemark): Promise<StreamSample> {
  const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${tidemark.url}${path}`, { method: "POST", headers: { ...AUTH, "content-type": "application/json" }, body: JSON.stringify(body) });
    if (response.status !== 201) throw new Error(`POST ${path} answered ${response.status}`);
    return (await response.json()) as Record<string, unknown>;
  };
  const startedAt = performance.now();
  const cpu = process.cpuUsage();
  const thread = await post("/v1/threads", {});
  const run = await post(`/v1/threads/${String(thread.thread_id)}/runs`, { input: { role: "user", content: "Stream as fast as you can." } });
  const consumption = await consumeSse(`${tidemark.url}/v1/runs/${String(run.run_id)}/events`, { headers: AUTH });
  const used = process.cpuUsage(cpu);
  if (consumption.deltas !== WORDS || consumption.lastType !== "run.completed") {
    throw new Error(`expected ${WORDS} deltas and run.completed, got ${consumption.deltas} and ${consumption.lastType}`);
  }
  return { cpuMicrosPerDelta: (used.user + used.system) / WORDS, deltasPerSecond: (WORDS / (consumption.endedAt - startedAt)) * 1000 };
}

/** One Stop over HTTP of a run that has streamed a few deltas. */
async function stopRepetition(variant: Variant): Promise<StopSample> {
  const { run, generation, watch } = await startStreamingRun(variant.cancel.runtime, TENANT, variant.probe.nextGeneration);
  const cpu = process.cpuUsage();
  const sentAt = performance.now();
  const response = await fetch(`${variant.cancel.url}/v1/runs/${run.runId}/cancel`, {
    method: "POST",
    headers: { ...AUTH, "content-type": "application/json" },
    body: JSON.stringify({ reason: "bench" }),
  });
  await response.json();
  const answeredAt = performance.now();
  if (response.status !== 202) throw new Error(`cancel answered ${response.status}`);
  const terminalAt = await withTimeout(watch.terminal, 5_000, "run.cancelled");
  const used = process.cpuUsage(cpu);
  watch.unsubscribe();
  if (watch.terminalType() !== "run.cancelled") throw new Error(`run ended with ${watch.terminalType()}`);
  const abortedAt = generation.abortedAt;
  if (abortedAt === undefined) throw new Error("the generation was not aborted");
  return { roundTripMs: answeredAt - sentAt, toSignalMs: abortedAt - sentAt, toCancelledMs: terminalAt - sentAt, cpuMicros: used.user + used.system };
}

/** The variants in a rotating order: repetition `index` starts with a different one each time. */
function rotated<T>(items: readonly T[], index: number): T[] {
  const shift = index % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

function ratioFigure(label: string, value: number, unit: string, baseline: { label: string; value: number }, target?: { text: string; max: number }): Figure {
  const figure = compared({ label, value: round(value, 3), unit }, { label: baseline.label, value: round(baseline.value, 3) });
  return target ? { ...figure, target: target.text, isMet: value / baseline.value <= target.max } : figure;
}

export const limitsTracingCost: Benchmark = {
  name: "limits-tracing-cost",
  summary: "stream-path and the HTTP Stop with the limits off, on (default), and on with the OpenTelemetry SDK registered, interleaved in one run",
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("limits-tracing");
    const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(droppingExporter)] });
    const variants: Variant[] = [];
    const streams: Record<VariantName, StreamSample[]> = { bare: [], limits: [], "limits+sdk": [] };
    const stops: Record<VariantName, StopSample[]> = { bare: [], limits: [], "limits+sdk": [] };
    try {
      for (const name of ["bare", "limits", "limits+sdk"] as const) variants.push(await startVariant(name, temp.dir));
      const sdkOf = (variant: Variant) => (variant.hasSdk ? provider : undefined);
      for (const variant of variants) await withTracing(sdkOf(variant), () => streamRepetition(variant.stream));
      for (let index = 0; index < STREAM_REPETITIONS; index++) {
        for (const variant of rotated(variants, index)) streams[variant.name].push(await withTracing(sdkOf(variant), () => streamRepetition(variant.stream)));
      }
      log(`limits-tracing-cost: ${STREAM_REPETITIONS} stream repetitions per variant measured`);
      for (let index = 0; index < WARMUP_STOPS + MEASURED_STOPS; index++) {
        for (const variant of rotated(variants, index)) {
          const sample = await withTracing(sdkOf(variant), () => stopRepetition(variant));
          if (index >= WARMUP_STOPS) stops[variant.name].push(sample);
        }
      }
      log(`limits-tracing-cost: ${MEASURED_STOPS} Stops per variant measured`);
    } finally {
      for (const variant of variants) {
        await variant.stream.close();
        await variant.cancel.close();
      }
      await provider.shutdown();
      temp.remove();
    }

    const cpu = (name: VariantName) => median(streams[name].map((sample) => sample.cpuMicrosPerDelta));
    const rate = (name: VariantName) => median(streams[name].map((sample) => sample.deltasPerSecond));
    const stop = (name: VariantName, field: keyof StopSample, p: number) => percentile(stops[name].map((sample) => sample[field]), p);
    const figures: Figure[] = [];
    const fivePercent = { text: "≤ 1.05×", max: 1.05 };
    // Stream: CPU per delta (server + client) is the cost; the rate is its consequence.
    figures.push({ label: "stream: CPU per delta, bare (median)", value: round(cpu("bare"), 2), unit: "µs" });
    figures.push(ratioFigure("stream: CPU per delta, limits (median)", cpu("limits"), "µs", { label: "bare", value: cpu("bare") }, fivePercent));
    figures.push(ratioFigure("stream: CPU per delta, limits+sdk (median)", cpu("limits+sdk"), "µs", { label: "limits", value: cpu("limits") }));
    figures.push({ label: "stream: deltas/s, bare (median)", value: round(rate("bare"), 0), unit: "deltas/s" });
    figures.push(ratioFigure("stream: deltas/s, limits (median)", rate("limits"), "deltas/s", { label: "bare", value: rate("bare") }));
    figures.push(ratioFigure("stream: deltas/s, limits+sdk (median)", rate("limits+sdk"), "deltas/s", { label: "limits", value: rate("limits") }));
    // Stop: from the POST to run.cancelled, and the round trip.
    for (const p of [50, 99]) {
      figures.push({ label: `Stop → run.cancelled p${p}, bare`, value: round(stop("bare", "toCancelledMs", p)), unit: "ms" });
      figures.push(
        ratioFigure(`Stop → run.cancelled p${p}, limits`, stop("limits", "toCancelledMs", p), "ms", { label: "bare", value: stop("bare", "toCancelledMs", p) }, p === 50 ? fivePercent : undefined),
      );
      figures.push(ratioFigure(`Stop → run.cancelled p${p}, limits+sdk`, stop("limits+sdk", "toCancelledMs", p), "ms", { label: "limits", value: stop("limits", "toCancelledMs", p) }));
    }
    // The CPU a Stop costs is steadier on a shared machine than its latency, which waits on the other processes.
    figures.push({ label: "Stop: CPU until run.cancelled p50, bare", value: round(stop("bare", "cpuMicros", 50), 0), unit: "µs" });
    figures.push(ratioFigure("Stop: CPU until run.cancelled p50, limits", stop("limits", "cpuMicros", 50), "µs", { label: "bare", value: stop("bare", "cpuMicros", 50) }, fivePercent));
    figures.push(ratioFigure("Stop: CPU until run.cancelled p50, limits+sdk", stop("limits+sdk", "cpuMicros", 50), "µs", { label: "limits", value: stop("limits", "cpuMicros", 50) }));
    figures.push({ label: "POST /cancel round trip p50, bare", value: round(stop("bare", "roundTripMs", 50)), unit: "ms" });
    figures.push(ratioFigure("POST /cancel round trip p50, limits", stop("limits", "roundTripMs", 50), "ms", { label: "bare", value: stop("bare", "roundTripMs", 50) }, fivePercent));
    figures.push(ratioFigure("POST /cancel round trip p50, limits+sdk", stop("limits+sdk", "roundTripMs", 50), "ms", { label: "limits", value: stop("limits", "roundTripMs", 50) }));

    const summaries = (name: VariantName) => ({
      stream: {
        cpuMicrosPerDelta: streams[name].map((sample) => round(sample.cpuMicrosPerDelta, 2)),
        deltasPerSecond: streams[name].map((sample) => round(sample.deltasPerSecond, 0)),
      },
      stop: {
        roundTripMs: summarize(stops[name].map((sample) => sample.roundTripMs)),
        toSignalMs: summarize(stops[name].map((sample) => sample.toSignalMs)),
        toCancelledMs: summarize(stops[name].map((sample) => sample.toCancelledMs)),
        cpuMicros: summarize(stops[name].map((sample) => sample.cpuMicros)),
      },
    });
    return {
      figures,
      details: {
        words: WORDS,
        streamRepetitions: STREAM_REPETITIONS,
        stops: { warmup: WARMUP_STOPS, measured: MEASURED_STOPS },
        variants: {
          bare: "run and stream limits Infinity (nothing counted), rate limit 0 (off), no OpenTelemetry SDK",
          limits: "DEFAULT_RUN_LIMITS and DEFAULT_RATE_LIMIT, no SDK (the API's no-op tracer)",
          "limits+sdk": "as limits, with BasicTracerProvider + BatchSpanProcessor + an exporter that drops the spans",
        },
        note: "server and client share this process; every variant has an API key; variants interleaved in a rotating order",
        bare: summaries("bare"),
        limits: summaries("limits"),
        "limits+sdk": summaries("limits+sdk"),
      },
    };
  },
};
