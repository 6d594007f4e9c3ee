import { spawn, type ChildProcessByStdio } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { createTempDir, findFreePort, mapLimited, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult } from "./benchmark.js";
import { consumeSse, type SseConsumption } from "./consume-sse.js";
import { median, round } from "./statistics.js";

const RUNS = 1_000;
/** Each run streams at this pace for longer than the benchmark lasts (1,000 words = 100 s). */
const WORDS_PER_SECOND = 10;
const WORDS = 1_000;
const SAMPLES = 5;
const SAMPLE_INTERVAL_MS = 400;
/** How long the runs keep streaming after the first samples, with RSS read every second. */
const LATER_MS = 20_000;
const CONCURRENCY = 16;

type Child = ChildProcessByStdio<null, Readable, Readable>;

/** VmRSS of `pid` in bytes, from /proc. */
function readRss(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}

/** User + system CPU seconds of `pid` so far, from /proc (clock ticks are 100 Hz on Linux). */
function readCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A few RSS samples `SAMPLE_INTERVAL_MS` apart; their median and maximum. */
async function sampleRss(pid: number): Promise<{ median: number; max: number; samples: number[] }> {
  const samples: number[] = [];
  for (let index = 0; index < SAMPLES; index++) {
    if (index > 0) await new Promise((resolve) => setTimeout(resolve, SAMPLE_INTERVAL_MS));
    samples.push(readRss(pid));
  }
  return { median: median(samples), max: Math.max(...samples), samples };
}

/** Starts `tidemark serve` on a free port and waits for its "serving" line. */
async function startChild(dbPath: string): Promise<{ child: Child; url: string; stderrTail(): string }> {
  const port = await findFreePort();
  const cli = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));
  const child = spawn(process.execPath, [cli, "serve", "--port", String(port), "--host", "127.0.0.1", "--db", dbPath], {
    env: { ...process.env, TIDEMARK_DEMO_WORDS_PER_SECOND: String(WORDS_PER_SECOND), TIDEMARK_DEMO_WORDS: String(WORDS) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-4_000);
  });
  let stdout = "";
  child.stdout.setEncoding("utf8");
  const serving = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: string) => {
      // Keep draining the pipe, but hold only the start of the output.
      if (stdout.length < 4_000) stdout += chunk;
      if (stdout.includes("Tidemark serving")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`tidemark serve exited with ${code}: ${stderr.slice(-500)}`)));
  });
  await withTimeout(serving, 15_000, "tidemark serve to start");
  return { child, url: `http://127.0.0.1:${port}`, stderrTail: () => stderr };
}

async function stopChild(child: Child): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  try {
    await withTimeout(exited, 10_000, "tidemark serve to exit");
  } catch {
    child.kill("SIGKILL");
    await exited;
  }
}

async function postJson(url: string, body: unknown, expected: number[]): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const parsed = (await response.json()) as Record<string, unknown>;
  if (!expected.includes(response.status)) throw new Error(`POST ${url} answered ${response.status}: ${JSON.stringify(parsed)}`);
  return parsed;
}

/** Least-squares slope of y over x. */
function slope(points: readonly { x: number; y: number }[]): number {
  const meanX = points.reduce((sum, point) => sum + point.x, 0) / points.length;
  const meanY = points.reduce((sum, point) => sum + point.y, 0) / points.length;
  const numerator = points.reduce((sum, point) => sum + (point.x - meanX) * (point.y - meanY), 0);
  const denominator = points.reduce((sum, point) => sum + (point.x - meanX) ** 2, 0);
  return numerator / denominator;
}

/** RSS of a `tidemark serve` child with 1,000 concurrent streaming runs, each with one SSE subscriber. */
export const rss1000: Benchmark = {
  name: "rss-1000",
  summary: `VmRSS of a \`tidemark serve\` child with ${RUNS.toLocaleString("en")} runs streaming at ${WORDS_PER_SECOND} words/s, one SSE subscriber each, vs the same child idle`,
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("rss");
    const { child, url, stderrTail } = await startChild(join(temp.dir, "rss.db"));
    const pid = child.pid!;
    const controllers: AbortController[] = [];
    const consumers: Promise<SseConsumption>[] = [];
    try {
      const idle = await sampleRss(pid);
      log(`rss-1000: idle ${round(idle.median / 1e6, 1)} MB; creating ${RUNS} runs`);

      const creationStart = performance.now();
      const runIds = await mapLimited(Array.from({ length: RUNS }), CONCURRENCY, async () => {
        const thread = await postJson(`${url}/v1/threads`, {}, [201]);
        const run = await postJson(`${url}/v1/threads/${String(thread.thread_id)}/runs`, { input: { role: "user", content: "Keep streaming." } }, [201]);
        return String(run.run_id);
      });
      const creationSeconds = (performance.now() - creationStart) / 1000;

      let streaming = 0;
      let deltasReceived = 0;
      let endedCount = 0;
      let onAllStreaming: (() => void) | undefined;
      const allStreaming = new Promise<void>((resolve) => (onAllStreaming = resolve));
      for (const runId of runIds) {
        const controller = new AbortController();
        controllers.push(controller);
        consumers.push(
          consumeSse(`${url}/v1/runs/${runId}/events`, {
            signal: controller.signal,
            onDelta: (deltas) => {
              deltasReceived++;
              if (deltas === 1 && ++streaming === RUNS) onAllStreaming?.();
            },
          }).finally(() => endedCount++),
        );
      }
      // Surface a failed or ended subscriber at once instead of after the timeout.
      const firstFailure = Promise.race(
        consumers.map((consumer) =>
          consumer.then((consumption): never => {
            throw new Error(`a stream ended early: status ${consumption.status}, last event ${consumption.lastType}`);
          }),
        ),
      );
      await withTimeout(Promise.race([allStreaming, firstFailure]), 90_000, `${RUNS} subscribers to receive deltas`);
      log(`rss-1000: ${RUNS} runs streaming to ${RUNS} subscribers`);

      // Phase A: the moment every run is streaming to its subscriber.
      const cpuBefore = readCpuSeconds(pid);
      const windowStart = performance.now();
      const deltasAtPeak = deltasReceived;
      const peak = await sampleRss(pid);
      // Phase B: keep streaming and watch RSS against the events delivered (and buffered).
      const trend: { x: number; y: number; seconds: number }[] = [];
      while (performance.now() - windowStart < LATER_MS) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        trend.push({ x: deltasReceived, y: readRss(pid), seconds: round((performance.now() - windowStart) / 1000, 1) });
      }
      const later = await sampleRss(pid);
      const windowSeconds = (performance.now() - windowStart) / 1000;
      const childCpuShare = (readCpuSeconds(pid) - cpuBefore) / windowSeconds;
      const deltasPerSecond = (deltasReceived - deltasAtPeak) / windowSeconds;
      const stillStreaming = RUNS - endedCount;

      await mapLimited(runIds, CONCURRENCY, (runId) => postJson(`${url}/v1/runs/${runId}/cancel`, { reason: "bench" }, [202, 200]));
      const ended = await withTimeout(Promise.all(consumers), 30_000, "every stream to end after cancel");
      const cancelled = ended.filter((consumption) => consumption.lastType === "run.cancelled").length;
      const afterCancel = await sampleRss(pid);
      log(`rss-1000: ${cancelled}/${RUNS} streams ended with run.cancelled`);

      const megabytes = (bytes: number) => round(bytes / 1e6, 1);
      const idleMb = { label: "idle", value: megabytes(idle.median) };
      const peakMax = Math.max(peak.max, later.max, ...trend.map((point) => point.y));
      return {
        figures: [
          { label: "idle RSS (median)", value: idleMb.value, unit: "MB" },
          {
            ...compared({ label: `RSS, ${RUNS} runs streaming + subscribed (median)`, value: megabytes(peak.median), unit: "MB" }, idleMb),
            target: "≤ 300 MB",
            isMet: peak.max <= 300e6,
          },
          { label: "RSS above idle per streaming run", value: round((peak.median - idle.median) / RUNS / 1e3, 1), unit: "kB" },
          {
            ...compared({ label: `max RSS over ${LATER_MS / 1000} s more streaming`, value: megabytes(peakMax), unit: "MB" }, idleMb),
            target: "≤ 300 MB",
            isMet: peakMax <= 300e6,
          },
          { label: "RSS growth per delta streamed (least squares)", value: round(slope(trend), 0), unit: "B" },
          { label: "child CPU while streaming", value: round(childCpuShare, 2), unit: "cores" },
          compared({ label: "RSS after cancelling every run", value: megabytes(afterCancel.median), unit: "MB" }, idleMb),
        ],
        details: {
          runs: RUNS,
          wordsPerSecond: WORDS_PER_SECOND,
          words: WORDS,
          creationSeconds: round(creationSeconds, 1),
          idleBytes: idle,
          peakBytes: peak,
          laterBytes: later,
          afterCancelBytes: afterCancel,
          peakMaxMegabytes: megabytes(peakMax),
          deltasPerRunAtPeak: round(deltasAtPeak / RUNS, 1),
          deltasPerRunLater: round(deltasReceived / RUNS, 1),
          trend: trend.map((point) => ({ seconds: point.seconds, deltasPerRun: round(point.x / RUNS, 1), rssMegabytes: megabytes(point.y) })),
          deltasPerSecondDelivered: round(deltasPerSecond, 0),
          streamsStillOpenBeforeCancel: stillStreaming,
          streamsEndedCancelled: cancelled,
        },
      };
    } catch (error) {
      throw new Error(`${error instanceof Error ? error.message : String(error)}; child stderr: ${stderrTail().slice(-500)}`, { cause: error });
    } finally {
      for (const controller of controllers) controller.abort();
      await Promise.allSettled(consumers);
      await stopChild(child);
      temp.remove();
    }
  },
};
