#!/usr/bin/env node
/**
 * `npm run bench [name …]`: runs the benchmarks (all, or those named), prints a table and writes
 * the figures with the machine's description to `bench/results/<ISO date-time>.json`.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { arch, cpus, loadavg, platform, totalmem } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Benchmark, BenchmarkResult } from "./benchmark.js";
import { cancelLatency } from "./cancel-latency.js";
import { checkpointCost } from "./checkpoint-cost.js";
import { clusterCancel } from "./cluster-cancel.js";
import { clientStream } from "./client-stream.js";
import { compatStop } from "./compat-stop.js";
import { compatStream } from "./compat-stream.js";
import { clusterThroughput } from "./cluster-throughput.js";
import { forkCost } from "./fork-cost.js";
import { formatTable } from "./format-table.js";
import { ledgerOverhead } from "./ledger-overhead.js";
import { manyStreams } from "./many-streams.js";
import { limitsTracingCost } from "./limits-tracing-cost.js";
import { liveBargeIn } from "./live-barge-in.js";
import { liveSessions } from "./live-sessions.js";
import { liveVadOnset } from "./live-vad-onset.js";
import { peerCompare } from "./peer-compare.js";
import { pgCheckpointCost } from "./pg-checkpoint-cost.js";
import { planOverhead } from "./plan-overhead.js";
import { planStop } from "./plan-stop.js";
import { resumeLatency } from "./resume-latency.js";
import { providerCpu } from "./provider-cpu.js";
import { providerStop } from "./provider-stop.js";
import { pruneCost } from "./prune-cost.js";
import { rss1000 } from "./rss-1000.js";
import { round } from "./statistics.js";
import { streamPath } from "./stream-path.js";
import { threadRender } from "./thread-render.js";
import { walBound } from "./wal-bound.js";

const BENCHMARKS: readonly Benchmark[] = [cancelLatency, streamPath, checkpointCost, rss1000, providerStop, providerCpu, ledgerOverhead, resumeLatency, forkCost, clusterCancel, clusterThroughput, pgCheckpointCost, clientStream, threadRender, planStop, planOverhead, liveBargeIn, liveVadOnset, liveSessions, compatStream, compatStop, limitsTracingCost, peerCompare, manyStreams, pruneCost, walBound];

const names = process.argv.slice(2);
const unknown = names.filter((name) => !BENCHMARKS.some((benchmark) => benchmark.name === name));
if (unknown.length > 0) {
  process.stderr.write(`unknown benchmark: ${unknown.join(", ")}; available: ${BENCHMARKS.map((b) => b.name).join(", ")}\n`);
  process.exit(2);
}
const selected = names.length > 0 ? BENCHMARKS.filter((benchmark) => names.includes(benchmark.name)) : BENCHMARKS;

const startedAt = new Date();
const machine = {
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model ?? "unknown",
  totalMemoryGb: round(totalmem() / 1e9, 1),
  node: process.version,
  platform: `${platform()} ${arch()}`,
  loadAverageAtStart: loadavg().map((value) => round(value, 2)),
};
const log = (message: string): void => void process.stderr.write(`${message}\n`);
log(`bench: ${selected.map((b) => b.name).join(", ")} on ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}`);

const results: Record<string, (BenchmarkResult & { summary: string; seconds: number }) | { summary: string; error: string }> = {};
for (const benchmark of selected) {
  const start = performance.now();
  log(`bench: ${benchmark.name} …`);
  try {
    const result = await benchmark.run({ log });
    const seconds = round((performance.now() - start) / 1000, 1);
    results[benchmark.name] = { summary: benchmark.summary, seconds, ...result };
    log(`bench: ${benchmark.name} done in ${seconds} s`);
  } catch (error) {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    results[benchmark.name] = { summary: benchmark.summary, error: message };
    log(`bench: ${benchmark.name} FAILED: ${message}`);
  }
}

process.stdout.write(`${formatTable(results)}\n`);

const directory = fileURLToPath(new URL("../../bench/results/", import.meta.url));
mkdirSync(directory, { recursive: true });
const file = join(directory, `${startedAt.toISOString().replace(/:/g, "-")}.json`);
const report = {
  date: startedAt.toISOString(),
  machine: { ...machine, loadAverageAtEnd: loadavg().map((value) => round(value, 2)) },
  totalSeconds: round((Date.now() - startedAt.getTime()) / 1000, 1),
  benchmarks: results,
};
writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
log(`bench: wrote ${file}`);
process.exitCode = Object.values(results).some((result) => "error" in result) ? 1 : 0;
