import { join } from "node:path";
import { createTempDir, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { LAYER_LABELS, LAYERS, openLayerStream, type Layer } from "./compat-clients.js";
import { startPlanProvider } from "./plan-provider.js";
import { processCpuNanos } from "./process-cpu-time.js";
import { startServe, stopAndReport, type ChildReport } from "./serve-child.js";
import { median, round } from "./statistics.js";

/*
 * Issue 16: what each compatibility layer's stream costs the server per delta, next to the native
 * SSE stream, in one run. A `tidemark serve` child (SQLite) reads the same 10,000-chunk answer from
 * the OpenAI-compatible test provider (its own process, as fast as the socket takes it) for each
 * run; the bench process reads each stream with fetch + eventsource-parser. The figure is the
 * server child's CPU (every thread, /proc schedstat, ns) from the request that starts the run to
 * the end of its stream, divided by the deltas.
 */

const DELTAS = 10_000;
const WARMUP_PER_LAYER = 3;
const REPETITIONS = 9;
/** Quiet time after each stream, outside any window, so that one run's tail work is not the next one's. */
const SETTLE_MS = 50;
const STREAM_TIMEOUT_MS = 30_000;
const TARGET_RATIO = 1.5;
const PROMPT = "Stream the same long answer for every layer.";

/** What one run through one layer cost the server. */
interface Sample {
  cpuMicrosPerDelta: number;
  deltasPerSecond: number;
  elapsedMs: number;
}

/** The frame each layer's stream must end with when the run completed (LangGraph's last part is its last delta). */
const LAST_TYPES: Record<Layer, string> = { native: "run.completed", openai: "response.completed", langgraph: "messages", "ag-ui": "RUN_FINISHED" };

async function measureOnce(layer: Layer, url: string, serverPid: number): Promise<Sample> {
  const cpuBefore = processCpuNanos(serverPid);
  const startedAt = performance.now();
  const stream = await openLayerStream(layer, url, PROMPT);
  await withTimeout(stream.ended, STREAM_TIMEOUT_MS, `the ${layer} stream to end`);
  const elapsedMs = performance.now() - startedAt;
  const cpuAfter = processCpuNanos(serverPid);
  if (cpuBefore === undefined || cpuAfter === undefined) throw new Error("compat-stream needs /proc/<pid>/task/*/schedstat (Linux)");
  if (stream.deltas !== DELTAS) throw new Error(`${layer}: expected ${DELTAS} deltas, got ${stream.deltas} (last ${stream.lastType})`);
  if (stream.lastType !== LAST_TYPES[layer]) throw new Error(`${layer}: the stream ended with ${stream.lastType}`);
  await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
  return { cpuMicrosPerDelta: (cpuAfter - cpuBefore) / 1000 / DELTAS, deltasPerSecond: (DELTAS / elapsedMs) * 1000, elapsedMs };
}

function roundSample(sample: Sample): Sample {
  return { cpuMicrosPerDelta: round(sample.cpuMicrosPerDelta, 2), deltasPerSecond: round(sample.deltasPerSecond, 0), elapsedMs: round(sample.elapsedMs, 1) };
}

/** Server CPU per delta through each compatibility layer's stream, against the native SSE stream of the same run. */
export const compatStream: Benchmark = {
  name: "compat-stream",
  summary: `server CPU per delta of a ${DELTAS.toLocaleString("en")}-chunk answer (tidemark serve child, provider in its own process) through OpenAI Responses, LangGraph and AG-UI streams, vs the native SSE stream`,
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("compat-stream");
    const provider = await startPlanProvider({ chunks: DELTAS, intervalMs: 0 });
    const samples: Record<Layer, Sample[]> = { native: [], openai: [], langgraph: [], "ag-ui": [] };
    let serverReport: ChildReport | undefined;
    try {
      const profileDir = process.env.TIDEMARK_BENCH_CPU_PROF_DIR;
      const server = await startServe({
        name: "serve",
        role: "all",
        db: join(temp.dir, "compat-stream.db"),
        outbox: join(temp.dir, "outbox.db"),
        env: {
          TIDEMARK_MODEL: "openai-compatible:bench",
          TIDEMARK_OPENAI_BASE_URL: provider.url,
        },
        // Profiling the server child on request (docs/benchmarks.md): its profile is written when it exits.
        nodeArgs: profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [],
      });
      try {
        for (let index = 0; index < WARMUP_PER_LAYER; index++) for (const layer of LAYERS) await measureOnce(layer, server.url, server.pid);
        log(`compat-stream: warmed up (${WARMUP_PER_LAYER} runs per layer)`);
        for (let index = 0; index < REPETITIONS; index++) {
          // Rotate the order, so that drift in the machine's load hits every layer alike.
          for (let offset = 0; offset < LAYERS.length; offset++) {
            const layer = LAYERS[(index + offset) % LAYERS.length]!;
            samples[layer].push(await measureOnce(layer, server.url, server.pid));
          }
          log(`compat-stream: repetition ${index + 1}/${REPETITIONS}`);
        }
      } finally {
        serverReport = await stopAndReport(server, log);
      }
    } finally {
      await provider.close();
      temp.remove();
    }
    const cpu = (layer: Layer) => round(median(samples[layer].map((sample) => sample.cpuMicrosPerDelta)), 2);
    const rate = (layer: Layer) => round(median(samples[layer].map((sample) => sample.deltasPerSecond)), 0);
    const native = { label: "native SSE", value: cpu("native") };
    const figures: Figure[] = [{ label: `server CPU per delta, ${LAYER_LABELS.native} (median)`, value: native.value, unit: "µs" }];
    for (const layer of LAYERS.slice(1)) {
      const figure = compared({ label: `server CPU per delta, ${LAYER_LABELS[layer]} (median)`, value: cpu(layer), unit: "µs" }, native);
      figures.push({ ...figure, target: `≤ ${TARGET_RATIO}× native`, isMet: figure.ratio! <= TARGET_RATIO });
    }
    const nativeRate = { label: "native SSE", value: rate("native") };
    figures.push({ label: `deltas/s, ${LAYER_LABELS.native} (median)`, value: nativeRate.value, unit: "deltas/s" });
    for (const layer of LAYERS.slice(1)) figures.push(compared({ label: `deltas/s, ${LAYER_LABELS[layer]} (median)`, value: rate(layer), unit: "deltas/s" }, nativeRate));
    return {
      figures,
      details: {
        deltas: DELTAS,
        repetitions: REPETITIONS,
        warmupPerLayer: WARMUP_PER_LAYER,
        method:
          "a tidemark serve child (SQLite, TIDEMARK_MODEL=openai-compatible:bench) reads the test provider (its own process, 10,000 chunks, intervalMs 0); " +
          "each sample is one run started and streamed to its end through one layer by the bench process (fetch + readSseEvents + JSON.parse), thread creation included; " +
          "CPU = the server child's threads' schedstat run time over that window; layers rotate each repetition; 50 ms of quiet after each stream",
        samples: Object.fromEntries(LAYERS.map((layer) => [layer, samples[layer].map(roundSample)])),
        server: serverReport,
      },
    };
  },
};
