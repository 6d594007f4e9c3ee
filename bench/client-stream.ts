import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTempDir, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import type { ClientStreamSample, ClientVariant } from "./client-stream-child.js";
import { startServe, stopAndReport } from "./serve-child.js";
import { median, round } from "./statistics.js";

const DELTAS = 10_000;
const REPETITIONS = 5;
const VARIANTS: readonly ClientVariant[] = ["baseline", "event-stream", "chat-session"];
const LABELS: Record<ClientVariant, string> = {
  baseline: "fetch + readSseEvents + JSON.parse",
  "event-stream": "openRunEventStream",
  "chat-session": "createChatSession (draft + snapshots)",
};
const CHILD_PATH = fileURLToPath(new URL("./client-stream-child.js", import.meta.url));

/** Runs one client child against `url`; resolves with the sample it printed. */
async function runChild(variant: ClientVariant, url: string): Promise<ClientStreamSample> {
  const child = spawn(process.execPath, ["--expose-gc", CHILD_PATH, variant, url, String(DELTAS)], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const code = await withTimeout(
    new Promise<number | null>((resolve) => child.once("exit", (exitCode) => resolve(exitCode))),
    60_000,
    `the ${variant} client`,
  ).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  if (code !== 0) throw new Error(`the ${variant} client exited ${code}: ${stderr.slice(0, 2000)}`);
  return JSON.parse(stdout.trim()) as ClientStreamSample;
}

/** Medians of one variant's samples, per delta where it is CPU, in MB where it is memory. */
function summarizeVariant(samples: readonly ClientStreamSample[]) {
  const mb = (bytes: number) => bytes / 1e6;
  return {
    cpuMicrosPerDelta: median(samples.map((s) => s.cpuMicros / s.deltas)),
    deltasPerSecond: median(samples.map((s) => (s.deltas / s.elapsedMs) * 1000)),
    heapGrowthMb: median(samples.map((s) => mb(s.heapAtEnd - s.heapBefore))),
    heapRetainedMb: median(samples.map((s) => mb(s.heapRetained - s.heapBefore))),
    rssGrowthMb: median(samples.map((s) => mb(s.rssAtEnd - s.rssBefore))),
    maxRssMb: median(samples.map((s) => mb(s.maxRss))),
    snapshots: median(samples.map((s) => s.snapshots ?? 0)),
    /** Samples (of the measured streams) in which the draft started again mid-stream. */
    samplesWithDraftRestart: samples.filter((s) => (s.draftRestarts ?? 0) > 0).length,
  };
}

/** Client CPU and memory for a 10,000-delta stream: bare parsing vs openRunEventStream vs createChatSession. */
export const clientStream: Benchmark = {
  name: "client-stream",
  summary: `client CPU and memory for one ${DELTAS.toLocaleString("en")}-delta stream from a tidemark serve child: openRunEventStream and createChatSession vs bare fetch + SSE parsing`,
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("client-stream");
    const server = await startServe({
      name: "serve",
      role: "all",
      db: join(temp.dir, "client-stream.db"),
      outbox: join(temp.dir, "outbox.db"),
      env: { TIDEMARK_DEMO_WORDS_PER_SECOND: "0", TIDEMARK_DEMO_WORDS: String(DELTAS) },
    });
    const samples: Record<ClientVariant, ClientStreamSample[]> = { baseline: [], "event-stream": [], "chat-session": [] };
    let serverReport: unknown;
    try {
      for (let index = 0; index < REPETITIONS; index++) {
        // Rotate the order, so that drift in the machine's load hits every variant alike.
        for (let offset = 0; offset < VARIANTS.length; offset++) {
          const variant = VARIANTS[(index + offset) % VARIANTS.length]!;
          samples[variant].push(await runChild(variant, server.url));
        }
        log(`client-stream: repetition ${index + 1}/${REPETITIONS}`);
      }
    } finally {
      serverReport = await stopAndReport(server, log);
      temp.remove();
    }
    const summary = Object.fromEntries(VARIANTS.map((variant) => [variant, summarizeVariant(samples[variant])])) as Record<
      ClientVariant,
      ReturnType<typeof summarizeVariant>
    >;
    const base = summary.baseline;
    const figures: Figure[] = [
      { label: `CPU per delta, ${LABELS.baseline} (median)`, value: round(base.cpuMicrosPerDelta, 2), unit: "µs" },
      { label: "heap growth over the stream, baseline (median)", value: round(base.heapGrowthMb, 2), unit: "MB" },
      { label: "heap kept after a GC, baseline (median)", value: round(base.heapRetainedMb, 3), unit: "MB" },
      { label: "peak RSS of the client process, baseline (median)", value: round(base.maxRssMb, 1), unit: "MB" },
    ];
    for (const variant of ["event-stream", "chat-session"] as const) {
      const own = summary[variant];
      figures.push(
        compared(
          { label: `CPU per delta, ${LABELS[variant]} (median)`, value: round(own.cpuMicrosPerDelta, 2), unit: "µs" },
          { label: "baseline", value: round(base.cpuMicrosPerDelta, 2) },
        ),
        compared(
          { label: `heap growth over the stream, ${variant} (median)`, value: round(own.heapGrowthMb, 2), unit: "MB" },
          { label: "baseline", value: round(base.heapGrowthMb, 2) },
        ),
        // No ratio: the baseline keeps next to nothing, and can come out below zero.
        { label: `heap kept after a GC, ${variant} (median)`, value: round(own.heapRetainedMb, 3), unit: "MB" },
        compared(
          { label: `peak RSS of the client process, ${variant} (median)`, value: round(own.maxRssMb, 1), unit: "MB" },
          { label: "baseline", value: round(base.maxRssMb, 1) },
        ),
      );
    }
    return {
      figures,
      details: {
        deltas: DELTAS,
        repetitions: REPETITIONS,
        note:
          "each sample is a fresh `node --expose-gc` child: one unmeasured stream, a full GC, then one measured stream (thread + run created over HTTP inside the window); the server is a `tidemark serve` child with the demo model at full speed",
        summary: Object.fromEntries(
          Object.entries(summary).map(([variant, values]) => [variant, Object.fromEntries(Object.entries(values).map(([key, value]) => [key, round(value, 3)]))]),
        ),
        samples,
        server: serverReport,
      },
    };
  },
};
