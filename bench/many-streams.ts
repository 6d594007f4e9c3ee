import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createTempDir } from "./bench-support.js";
import type { Benchmark, BenchmarkResult, Figure } from "./benchmark.js";
import { DelayHistogram } from "./delay-histogram.js";
import { clockOffset, startManyStreamsClient, startManyStreamsServer, type ClientChild, type ServerChild } from "./many-streams-children.js";
import type { ClientStatus } from "./many-streams-client.js";
import { stopAndReport, type ChildReport } from "./serve-child.js";
import { round } from "./statistics.js";

/** Streams held open at each step; the runs of a step go on streaming through the next ones. */
const STEPS = [1_000, 5_000, 10_000];
/** Client processes, each holding its share of the SSE connections (2,500 at the last step). */
const CLIENTS = 4;
/**
 * One chunk per stream per second: 10,000 chunks a second at the last step, on a 2-core machine
 * that runs the clients too. A token-per-chunk provider sends 20–50 a second to one reader, but
 * that is per run, not per process: a server with 10,000 streams open is one whose readers are
 * mostly idle (a chat is read far longer than it generates), and a second per chunk is the pace
 * that keeps the clients' share of the 2 cores small enough to measure the server.
 */
const PERIOD_MS = 1_000;
/** A run ends after this many chunks in any case (10 minutes), should the benchmark not end it. */
const MAX_CHUNKS = 600;
/** After a step's streams are all open, before its window: the creates' work is over. */
const SETTLE_MS = 3_000;
const WINDOW_MS = 12_000;
const RSS_EVERY_MS = 250;

/** VmRSS of `pid` in bytes, from /proc. */
function readRss(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function usage(server: ServerChild, gc = false) {
  const answer = server.next("usage", 30_000);
  server.send({ type: "usage", gc });
  return answer;
}

function sumStatus(statuses: readonly ClientStatus[]): ClientStatus {
  return {
    streaming: statuses.reduce((sum, status) => sum + status.streaming, 0),
    completed: statuses.reduce((sum, status) => sum + status.completed, 0),
    broken: statuses.reduce((sum, status) => sum + status.broken, 0),
    failedCreates: statuses.reduce((sum, status) => sum + status.failedCreates, 0),
    problems: statuses.flatMap((status) => status.problems).slice(0, 10),
  };
}

async function statusOf(clients: readonly ClientChild[]): Promise<ClientStatus> {
  const answers = clients.map((client) => client.next("status", 10_000));
  for (const client of clients) client.send({ type: "status" });
  return sumStatus((await Promise.all(answers)).map((answer) => answer.status));
}

/** Opens `count` more streams, spread over the clients; resolves once each streams or failed. */
async function openStreams(clients: readonly ClientChild[], count: number): Promise<number> {
  const answers = clients.map((client, index) => {
    const share = Math.floor(count / clients.length) + (index < count % clients.length ? 1 : 0);
    const answer = client.next("opened", 240_000);
    client.send({ type: "open", count: share });
    return answer;
  });
  return (await Promise.all(answers)).reduce((sum, answer) => sum + answer.created, 0);
}

/** Paced streams in one server process: RSS, CPU per chunk and delivery delay at 1,000, 5,000 and 10,000. */
export const manyStreams: Benchmark = {
  name: "many-streams",
  summary: `${STEPS.map((step) => step.toLocaleString("en")).join(" / ")} concurrent paced streams (a chunk per second each) in one server process, clients in ${CLIENTS} others: RSS, CPU per chunk, model write → SSE read delay`,
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("many-streams");
    const server = await startManyStreamsServer(join(temp.dir, "many-streams.db"), PERIOD_MS, MAX_CHUNKS);
    const pid = server.process.pid!;
    const clients: ClientChild[] = [];
    let peakRss = 0;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, readRss(pid))), RSS_EVERY_MS);
    const reports: ChildReport[] = [];
    try {
      for (let index = 0; index < CLIENTS; index++) clients.push(await startManyStreamsClient(server.supervised.url, index));
      const serverOffset = await clockOffset(server);
      for (const client of clients) client.send({ type: "offset", serverMinusClientMs: serverOffset - (await clockOffset(client)) });
      const idle = await usage(server, true);
      const idleRss = readRss(pid);
      log(`many-streams: idle server ${round(idleRss / 1e6, 1)} MB`);

      const figures: Figure[] = [];
      const steps: Record<string, unknown>[] = [];
      let open = 0;
      for (const target of STEPS) {
        peakRss = readRss(pid);
        const openStart = performance.now();
        const created = await openStreams(clients, target - open);
        open = target;
        const openSeconds = (performance.now() - openStart) / 1000;
        log(`many-streams: ${target} streams open (${created} created in ${round(openSeconds, 1)} s)`);
        await delay(SETTLE_MS);

        const before = await usage(server);
        for (const client of clients) client.send({ type: "window-start" });
        const windowStart = performance.now();
        await delay(WINDOW_MS);
        const windows = clients.map((client) => client.next("window", 30_000));
        for (const client of clients) client.send({ type: "window-end" });
        const after = await usage(server);
        const windowSeconds = (performance.now() - windowStart) / 1000;
        const histogram = new DelayHistogram();
        const answers = await Promise.all(windows);
        for (const answer of answers) histogram.addCounts(answer.counts);
        const status = sumStatus(answers.map((answer) => answer.status));
        const collected = await usage(server, true);
        const chunks = after.chunksWritten - before.chunksWritten;
        const step = {
          streams: target,
          created,
          openSeconds: round(openSeconds, 1),
          peakRssMb: round(peakRss / 1e6, 1),
          rssPerStreamKb: round((peakRss - idleRss) / target / 1e3, 1),
          heapTotalAtWindowEndMb: round(after.heapTotalBytes / 1e6, 1),
          heapPerStreamKb: round((collected.heapUsedBytes - idle.heapUsedBytes) / target / 1e3, 2),
          externalPerStreamKb: round((collected.externalBytes - idle.externalBytes) / target / 1e3, 2),
          cpuCores: round((after.cpuMicros - before.cpuMicros) / 1e6 / windowSeconds, 2),
          cpuPerChunkMicros: round((after.cpuMicros - before.cpuMicros) / chunks, 1),
          chunksWritten: chunks,
          loopDelayWhileOpeningMaxMs: round(before.loopDelayMaxMs, 1),
          loopDelayP99Ms: round(after.loopDelayP99Ms, 1),
          loopDelayMaxMs: round(after.loopDelayMaxMs, 1),
          chunksDelivered: histogram.total,
          delayP50Ms: round(histogram.percentile(50), 1),
          delayP90Ms: round(histogram.percentile(90), 1),
          delayP99Ms: round(histogram.percentile(99), 1),
          delayMaxMs: round(histogram.percentile(100), 1),
          errors: status.failedCreates + status.broken,
          status,
        };
        steps.push(step);
        log(`many-streams: ${JSON.stringify({ ...step, status: undefined })}`);
        const isLast = target === STEPS.at(-1);
        const label = (text: string) => `${target.toLocaleString("en")} streams: ${text}`;
        figures.push(
          { label: label("server RSS, peak"), value: step.peakRssMb, unit: "MB", ...(isLast ? { target: "≤ 1,500 MB", isMet: peakRss <= 1.5e9 } : {}) },
          { label: label("RSS above idle per stream"), value: step.rssPerStreamKb, unit: "kB" },
          { label: label("server CPU per chunk"), value: step.cpuPerChunkMicros, unit: "µs" },
          { label: label("delivery delay p50"), value: step.delayP50Ms, unit: "ms" },
          { label: label("delivery delay p99"), value: step.delayP99Ms, unit: "ms", ...(isLast ? { target: "≤ 50 ms", isMet: step.delayP99Ms <= 50 } : {}) },
          { label: label("errors"), value: step.errors, unit: "", target: "0", isMet: step.errors === 0 },
        );
      }

      // Every run ends at its next slot; each stream must end with run.completed.
      server.send({ type: "finish" });
      await server.next("finishing", 5_000);
      const finishStart = performance.now();
      let ending = await statusOf(clients);
      while (ending.streaming > 0 && performance.now() - finishStart < 30_000) {
        await delay(250);
        ending = await statusOf(clients);
      }
      const endSeconds = (performance.now() - finishStart) / 1000;
      await delay(1_000);
      const ended = await usage(server, true);
      const endedRuns = STEPS.at(-1)!;
      const errors = ending.failedCreates + ending.broken + ending.streaming;
      log(`many-streams: ${ending.completed} streams ended with run.completed in ${round(endSeconds, 1)} s; ${errors} errors`);
      figures.push(
        { label: "after every run ended: heap above idle per ended run (buffer kept for Last-Event-ID)", value: round((ended.heapUsedBytes - idle.heapUsedBytes) / endedRuns / 1e3, 2), unit: "kB" },
        { label: "errors: failed creates + broken streams + streams that never ended", value: errors, unit: "", target: "0", isMet: errors === 0 },
      );
      return {
        figures,
        details: {
          steps,
          clients: CLIENTS,
          periodMs: PERIOD_MS,
          windowMs: WINDOW_MS,
          idle: { rssMb: round(idleRss / 1e6, 1), heapUsedMb: round(idle.heapUsedBytes / 1e6, 1) },
          end: {
            seconds: round(endSeconds, 1),
            status: ending,
            rssMb: round(ended.rssBytes / 1e6, 1),
            heapUsedMb: round(ended.heapUsedBytes / 1e6, 1),
            buffersKept: ended.buffers,
            chunksWritten: ended.chunksWritten,
          },
          children: reports,
        },
      };
    } finally {
      clearInterval(sampler);
      for (const client of clients) reports.push(await stopAndReport(client.supervised, log));
      reports.push(await stopAndReport(server.supervised, log));
      temp.remove();
    }
  },
};
