#!/usr/bin/env node
/**
 * `npm run soak`: a bounded soak of the embedded product (issue 17, item 4). A `tidemark serve`
 * child on SQLite with the demo model, `TIDEMARK_SOAK_USERS` users (500) for
 * `TIDEMARK_SOAK_MINUTES` (10) doing random turns (see soak-driver.ts), the child's RSS sampled
 * every 5 s. Reports the RSS slope, the Stop latency (p50/p99) minute by minute, the turns by
 * kind, and what must be none: violations, 5xx, runs left unfinished, errors logged, and
 * `tidemark check` findings. Writes `bench/results/soak-<ISO time>.json`; exits 1 if any is not none.
 * `TIDEMARK_SOAK_HEAP=1` also reads the server's live heap after a full GC each minute, and
 * `TIDEMARK_SOAK_CPU_PROF=<dir>` writes its CPU profile there.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createTempDir, findFreePort } from "../bench-support.js";
import { CLI_PATH, startServe } from "../serve-child.js";
import { percentile, round } from "../statistics.js";
import { readHeapAfterGc, type HeapReading } from "./heap-probe.js";
import { runSoak, unfinishedRuns } from "./soak-driver.js";

const users = Number(process.env.TIDEMARK_SOAK_USERS ?? 500);
const minutes = Number(process.env.TIDEMARK_SOAK_MINUTES ?? 10);
const seed = Number(process.env.TIDEMARK_SEED ?? 20_261_202);
const log = (message: string): void => void process.stderr.write(`${message}\n`);
// `TIDEMARK_SOAK_HEAP=1`: each minute, a full GC in the server and its live heap read after it
// (through the inspector). The GC stops the server for a moment: that minute's Stop tail shows it.
const inspectPort = process.env.TIDEMARK_SOAK_HEAP === "1" ? await findFreePort() : undefined;

const temp = createTempDir("tidemark-soak-");
const dbPath = join(temp.dir, "soak.db");
// A 3 s answer (60 words at 20 a second): long enough to Stop or drop mid-answer.
const server = await startServe({
  name: "soak server",
  role: "all",
  db: dbPath,
  outbox: dbPath,
  env: { TIDEMARK_DEMO_WORDS_PER_SECOND: "20", TIDEMARK_DEMO_WORDS: "60" },
  nodeArgs: [
    ...(process.env.TIDEMARK_SOAK_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.TIDEMARK_SOAK_CPU_PROF}`] : []),
    ...(inspectPort ? [`--inspect=127.0.0.1:${inspectPort}`] : []),
  ],
});
const heapAfterGc: ({ minute: number } & HeapReading)[] = [];
const heapReads: Promise<void>[] = [];
function readHeap(minute: number): void {
  heapReads.push(
    readHeapAfterGc(inspectPort!).then(
      (reading) => {
        heapAfterGc.push({ minute, ...reading });
        log(`soak: minute ${minute}, heap after a full GC ${reading.heapUsedMb} MB (GC ${reading.gcMs} ms, RSS then ${reading.rssMb} MB)`);
      },
      (error: unknown) => log(`soak: minute ${minute}, heap not read: ${String(error)}`),
    ),
  );
}
const rssMb = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
const samples: { atS: number; rssMb: number }[] = [];
const startedAt = performance.now();
const sampler = setInterval(() => samples.push({ atS: round((performance.now() - startedAt) / 1000, 1), rssMb: round(rssMb(), 1) }), 5_000);
log(`soak: ${users} users for ${minutes} min on ${server.url} (seed ${seed}), ${cpus().length} × ${cpus()[0]?.model}, load ${loadavg()[0]!.toFixed(2)}`);

const report = await runSoak({
  url: server.url,
  users,
  durationMs: minutes * 60_000,
  seed,
  onMinute: (minute) => {
    log(`soak: minute ${minute}, RSS ${rssMb().toFixed(1)} MB, load ${loadavg()[0]!.toFixed(2)}`);
    if (inspectPort) void readHeap(minute);
  },
});
clearInterval(sampler);
await Promise.all(heapReads);
const unfinished = await unfinishedRuns(server.url, report.runIds);
const exit = await server.stop();
const logs = server.logs();
const check = await promisify(execFile)(process.execPath, [CLI_PATH, "check", "--db", dbPath]).then(
  (result) => ({ code: 0, output: result.stdout.trim() }),
  (error: { code?: number; stdout?: string }) => ({ code: error.code ?? 1, output: String(error.stdout ?? "").trim() }),
);
temp.remove();

// The RSS slope after the first minute (the warm-up), by least squares, in MB per minute.
const steady = samples.filter((sample) => sample.atS >= 60);
const slope = leastSquaresSlope(steady.map((sample) => [sample.atS / 60, sample.rssMb]));
// The second half of the soak: past the warm-up and the event buffers' first expiries.
const secondHalfSlope = leastSquaresSlope(samples.filter((sample) => sample.atS >= minutes * 30).map((sample) => [sample.atS / 60, sample.rssMb]));
const byMinute = report.stopLatencyByMinute.map((latencies, minute) => ({
  minute: minute + 1,
  stops: latencies?.length ?? 0,
  p50Ms: latencies?.length ? round(percentile(latencies, 50), 1) : null,
  p99Ms: latencies?.length ? round(percentile(latencies, 99), 1) : null,
}));
const result = {
  startedAt: new Date(Date.now() - (performance.now() - startedAt)).toISOString(),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, loadAverageAtEnd: loadavg().map((value) => round(value, 2)) },
  users,
  minutes,
  seed,
  turns: report.turns,
  runs: report.runIds.length,
  rss: {
    firstMb: samples[0]?.rssMb,
    lastMb: samples.at(-1)?.rssMb,
    maxMb: Math.max(...samples.map((sample) => sample.rssMb)),
    slopeMbPerMinuteAfterMinute1: slope === undefined ? null : round(slope, 2),
    slopeMbPerMinuteSecondHalf: secondHalfSlope === undefined ? null : round(secondHalfSlope, 2),
    samples,
  },
  stopLatencyByMinute: byMinute,
  heapAfterGcByMinute: inspectPort ? heapAfterGc : null,
  violations: report.violations.slice(0, 50),
  violationCount: report.violations.length,
  serverErrors: report.serverErrors.slice(0, 50),
  serverErrorCount: report.serverErrors.length,
  unfinishedRuns: unfinished,
  errorsLogged: logs.counts.error ?? 0,
  logProblems: logs.problems,
  serverExit: exit,
  check,
};
const directory = fileURLToPath(new URL("../../../bench/results/", import.meta.url));
mkdirSync(directory, { recursive: true });
const file = join(directory, `soak-${new Date().toISOString().replace(/:/g, "-")}.json`);
writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);

log(`soak: ${report.runIds.length} runs, turns ${JSON.stringify(report.turns)}`);
log(`soak: RSS ${result.rss.firstMb} → ${result.rss.lastMb} MB (max ${result.rss.maxMb}), slope after minute 1: ${result.rss.slopeMbPerMinuteAfterMinute1} MB/min, in the second half: ${result.rss.slopeMbPerMinuteSecondHalf} MB/min`);
for (const row of byMinute) log(`soak: minute ${row.minute}: ${row.stops} Stops, p50 ${row.p50Ms} ms, p99 ${row.p99Ms} ms`);
log(`soak: violations ${report.violations.length}, 5xx/transport ${report.serverErrors.length}, unfinished ${unfinished.length}, errors logged ${result.errorsLogged}, check exit ${check.code}: ${check.output.split("\n")[0]}`);
log(`soak: wrote ${file}`);
const isClean = report.violations.length === 0 && report.serverErrors.length === 0 && unfinished.length === 0 && result.errorsLogged === 0 && check.code === 0;
process.exit(isClean ? 0 : 1);

function leastSquaresSlope(points: [number, number][]): number | undefined {
  if (points.length < 2) return undefined;
  const meanX = points.reduce((sum, [x]) => sum + x, 0) / points.length;
  const meanY = points.reduce((sum, [, y]) => sum + y, 0) / points.length;
  const numerator = points.reduce((sum, [x, y]) => sum + (x - meanX) * (y - meanY), 0);
  const denominator = points.reduce((sum, [x]) => sum + (x - meanX) ** 2, 0);
  return denominator === 0 ? undefined : numerator / denominator;
}
