import { join } from "node:path";
import { TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { absoluteNow, type ClockOffset } from "./absolute-clock.js";
import { dropBenchSchema, newBenchSchemaName, withBenchDatabase } from "./bench-database.js";
import { createTempDir, requestJson, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { nextProbeMarker, startProbeHost, type ProbeChild } from "./probe-host.js";
import { openRunStream } from "./run-stream.js";
import { startServe, stopAndReport, type ChildReport, type ServeChild } from "./serve-child.js";
import { percentile, round, summarize } from "./statistics.js";

/*
 * Cross-process cancel latency of the scaled deployment (an API process and a worker process on
 * one PostgreSQL schema), against the embedded single process (`--role all` on SQLite).
 */

const WARMUP_RUNS = 10;
/** Runs measured per setup (fewer if a setup's time budget runs out first). */
const MEASURED_RUNS = 200;
/** Time budget per setup, warm-up included; three setups stay within about a minute. */
const SETUP_BUDGET_MS = 17_000;
/** Stops measured after a quiet spell, and its length: longer than the pools' idle timeout (10 s), as a user's think time is. */
const AFTER_IDLE_RUNS = 6;
const IDLE_MS = 11_000;
/** Deltas the client has seen before it presses Stop. */
const DELTAS_BEFORE_CANCEL = 3;
/**
 * The shipped configuration: `npm start`'s defaults, nothing set (the demo model's 120 words at 30
 * words/s: every run is mid-generation when it is stopped after its first deltas).
 */
const DEMO_ENV: Record<string, string> = {};
const TARGET_P99_MS = 25;
const PROMPT = "Please write a long answer so that I can press Stop.";

/** One stopped run, every time relative to the moment the POST /cancel was sent. */
interface CancelSample {
  runId: string;
  /** absoluteNow() just before fetch(POST /cancel). */
  sentAt: number;
  /** → the 202 reply (body read). */
  toReplyMs: number;
  /** → `run.cancel_requested` arrived on the client's SSE stream. */
  toCancelRequestedEventMs: number;
  /** → `run.cancelled` arrived on the client's SSE stream. */
  toCancelledEventMs: number;
  /** → the generation's AbortSignal aborted in the executing process (probe hosts only). */
  toAbortMs?: number;
}

/** Starts a run on a fresh thread, waits for a few deltas on its stream, presses Stop, and times it. */
async function cancelOnce(apiUrl: string, probe: ProbeChild | undefined): Promise<CancelSample> {
  const marker = nextProbeMarker();
  const thread = await requestJson<{ thread_id: string }>("POST", `${apiUrl}/v1/threads`, {}, [201]);
  const run = await requestJson<{ run_id: string }>("POST", `${apiUrl}/v1/threads/${thread.thread_id}/runs`, { input: { role: "user", content: `${PROMPT} ${marker}` } }, [201]);
  const stream = openRunStream(`${apiUrl}/v1/runs/${run.run_id}/events`);
  try {
    await withTimeout(stream.untilDeltas(DELTAS_BEFORE_CANCEL), 10_000, `${DELTAS_BEFORE_CANCEL} deltas of ${run.run_id}`);
    const sentAt = absoluteNow();
    const reply = await requestJson<{ status: string }>("POST", `${apiUrl}/v1/runs/${run.run_id}/cancel`, { reason: "bench" }, [202]);
    const repliedAt = absoluteNow();
    if (reply.status !== "cancel_requested") throw new Error(`cancel answered status ${reply.status}`);
    await withTimeout(stream.ended, 10_000, `the end of ${run.run_id}'s stream`);
    if (stream.lastType !== "run.cancelled") throw new Error(`${run.run_id} ended with ${JSON.stringify(stream.lastEvent)}`);
    const abortedAt = probe ? await probe.abortedAt(marker, 5_000) : undefined;
    return {
      runId: run.run_id,
      sentAt,
      toReplyMs: repliedAt - sentAt,
      toCancelRequestedEventMs: stream.arrivals.get("run.cancel_requested")! - sentAt,
      toCancelledEventMs: stream.arrivals.get("run.cancelled")! - sentAt,
      toAbortMs: abortedAt === undefined ? undefined : abortedAt - sentAt,
    };
  } finally {
    stream.close();
  }
}

/** Warm-up, then up to MEASURED_RUNS stops one after another, within SETUP_BUDGET_MS. */
async function measureSetup(name: string, apiUrl: string, probe: ProbeChild | undefined, log: (message: string) => void): Promise<CancelSample[]> {
  const deadline = performance.now() + SETUP_BUDGET_MS;
  for (let index = 0; index < WARMUP_RUNS; index++) await cancelOnce(apiUrl, probe);
  const samples: CancelSample[] = [];
  while (samples.length < MEASURED_RUNS && performance.now() < deadline) samples.push(await cancelOnce(apiUrl, probe));
  log(`cluster-cancel: ${name}: ${samples.length} runs stopped`);
  return samples;
}

/** When the worker emitted each run's `run.cancel_requested` and `run.cancelled` (`run_events.at`: its Date.now(), whole ms). */
async function workerCancelEventTimes(schema: string, type: "run.cancel_requested" | "run.cancelled"): Promise<Map<string, number>> {
  const { rows } = await withBenchDatabase((client) =>
    client.query<{ run_id: string; at: string }>(`SELECT run_id, at FROM ${schema}.run_events WHERE event LIKE $1`, [`{"type":"${type}"%`]),
  );
  return new Map(rows.map((row) => [row.run_id, Number(row.at)]));
}

const values = (samples: readonly CancelSample[], of: (sample: CancelSample) => number | undefined): number[] =>
  samples.map(of).filter((value): value is number => value !== undefined && Number.isFinite(value));

function summarizeSetup(samples: readonly CancelSample[]) {
  return {
    runs: samples.length,
    sentToAbortMs: samples[0]?.toAbortMs === undefined ? undefined : summarize(values(samples, (sample) => sample.toAbortMs)),
    sentToReplyMs: summarize(values(samples, (sample) => sample.toReplyMs)),
    sentToCancelRequestedOnSseMs: summarize(values(samples, (sample) => sample.toCancelRequestedEventMs)),
    sentToCancelledOnSseMs: summarize(values(samples, (sample) => sample.toCancelledEventMs)),
  };
}

/** POST /cancel to an API process → the worker process's generation aborted; embedded single process as baseline. */
export const clusterCancel: Benchmark = {
  name: "cluster-cancel",
  summary:
    "POST /v1/runs/{id}/cancel sent to an API process → the generation aborted in the worker process (PostgreSQL, LISTEN/NOTIFY), " +
    "→ 202, → run.cancelled on SSE; baseline the embedded single process (--role all, SQLite)",
  async run({ log }): Promise<BenchmarkResult> {
    const note = (message: string) => log(`cluster-cancel: ${message}`);
    const temp = createTempDir("cluster-cancel");
    const schema = newBenchSchemaName();
    const children: ServeChild[] = [];
    const stopOne = (child: ServeChild) => stopAndReport(child, note);
    const stopAll = () => Promise.all(children.splice(0).map(stopOne));
    const childReports: ChildReport[] = [];
    let embedded: CancelSample[];
    let probed: CancelSample[];
    let shipped: CancelSample[];
    const afterIdle: CancelSample[] = [];
    let eventTimes: Map<string, number>;
    let cancelledTimes: Map<string, number>;
    const clock: Record<string, ClockOffset> = {};
    try {
      // 1. The embedded single process: HTTP, SQLite and execution in one process.
      const single = await startProbeHost({ name: "embedded (all, SQLite)", role: "all", dbPath: join(temp.dir, "embedded.db"), outbox: join(temp.dir, "embedded.db"), env: DEMO_ENV });
      children.push(single);
      clock.embedded = await single.clockOffset(50);
      embedded = await measureSetup("embedded", single.url, single, log);
      childReports.push(...(await stopAll()));

      // 2. API process (the CLI) + worker process (probe host) on one schema.
      const database = { db: TEST_PG_URL, schema, outbox: join(temp.dir, "outbox.db"), env: DEMO_ENV };
      const api = await startServe({ name: "api (CLI)", role: "api", ...database });
      children.push(api);
      const probeWorker = await startProbeHost({ name: "worker (probe host)", role: "worker", databaseUrl: TEST_PG_URL, schema, outbox: database.outbox, env: DEMO_ENV });
      children.push(probeWorker);
      clock.clusterWorker = await probeWorker.clockOffset(50);
      probed = await measureSetup("cluster, probe worker", api.url, probeWorker, log);
      children.splice(children.indexOf(probeWorker), 1);
      childReports.push(await stopOne(probeWorker));

      // 3. The same API process + the shipped CLI worker: the worker's own record of the stop is run_events.at.
      const cliWorker = await startServe({ name: "worker (CLI)", role: "worker", ...database });
      children.push(cliWorker);
      shipped = await measureSetup("cluster, CLI worker", api.url, undefined, log);
      // 4. The same processes, each Stop after the user's think time (nothing else running meanwhile).
      for (let index = 0; index < AFTER_IDLE_RUNS; index++) {
        await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
        afterIdle.push(await cancelOnce(api.url, undefined));
      }
      log(`cluster-cancel: cluster, CLI worker after ${IDLE_MS / 1000} s idle: ${afterIdle.length} runs stopped`);
      childReports.push(...(await stopAll()));
      eventTimes = await workerCancelEventTimes(schema, "run.cancel_requested");
      cancelledTimes = await workerCancelEventTimes(schema, "run.cancelled");
    } finally {
      childReports.push(...(await stopAll()));
      await dropBenchSchema(schema, note);
      temp.remove();
    }

    // The worker's run.cancel_requested is emitted in the same synchronous turn as scope.cancel()
    // (stopForAcceptedCancel); its Date.now() is whole milliseconds, so this reads 0–1 ms early.
    const toWorkerEvent = (sample: CancelSample) => {
      const at = eventTimes.get(sample.runId);
      return at === undefined ? undefined : at - sample.sentAt;
    };
    const shippedToWorker = values(shipped, toWorkerEvent);
    // The worker's own part of a Stop: from the notice (its run.cancel_requested) to the recorded end (its run.cancelled).
    const shippedWorkerStop = values(shipped, (sample) => {
      const requested = eventTimes.get(sample.runId);
      const cancelled = cancelledTimes.get(sample.runId);
      return requested === undefined || cancelled === undefined ? undefined : cancelled - requested;
    });
    const probedEventMinusAbort = values(probed, (sample) => {
      const at = eventTimes.get(sample.runId);
      return at === undefined || sample.toAbortMs === undefined ? undefined : at - (sample.sentAt + sample.toAbortMs);
    });

    const roundedPercentile = (samples: readonly number[], q: number) => round(percentile(samples, q));
    const embeddedAbort = values(embedded, (sample) => sample.toAbortMs);
    const probedAbort = values(probed, (sample) => sample.toAbortMs);
    const embeddedBaseline = (label: string, samples: readonly number[], q: number) => ({ label: `embedded ${label} p${q}`, value: roundedPercentile(samples, q) });
    /** p50 and p99 of `samples`, each against the embedded setup's same percentile. */
    const p50AndP99 = (label: string, samples: readonly number[], baseline: readonly number[], baseLabel: string, hasTarget?: boolean): Figure[] => [
      compared({ label: `${label} p50`, value: roundedPercentile(samples, 50), unit: "ms" }, embeddedBaseline(baseLabel, baseline, 50)),
      {
        ...compared({ label: `${label} p99`, value: roundedPercentile(samples, 99), unit: "ms" }, embeddedBaseline(baseLabel, baseline, 99)),
        ...(hasTarget ? { target: `≤ ${TARGET_P99_MS} ms`, isMet: percentile(samples, 99) <= TARGET_P99_MS } : {}),
      },
    ];
    const embeddedReply = values(embedded, (sample) => sample.toReplyMs);
    const embeddedCancelled = values(embedded, (sample) => sample.toCancelledEventMs);
    return {
      figures: [
        ...p50AndP99("cluster: cancel sent → worker generation aborted (probe)", probedAbort, embeddedAbort, "aborted", true),
        ...p50AndP99("cluster, CLI worker: cancel sent → worker's run.cancel_requested (run_events.at, 1 ms res.)", shippedToWorker, embeddedAbort, "aborted", true),
        ...p50AndP99("cluster, CLI worker: cancel sent → 202", values(shipped, (sample) => sample.toReplyMs), embeddedReply, "202"),
        ...p50AndP99("cluster, CLI worker: cancel sent → run.cancelled on SSE", values(shipped, (sample) => sample.toCancelledEventMs), embeddedCancelled, "run.cancelled", true),
        compared(
          { label: `cluster, CLI worker, after ${IDLE_MS / 1000} s idle: cancel sent → run.cancelled on SSE, max of ${AFTER_IDLE_RUNS}`, value: round(Math.max(...values(afterIdle, (sample) => sample.toCancelledEventMs))), unit: "ms" },
          embeddedBaseline("run.cancelled", embeddedCancelled, 99),
        ),
      ],
      details: {
        method:
          "each run on a fresh thread, one at a time: POST run to the API process, read its SSE stream there until " +
          `${DELTAS_BEFORE_CANCEL} deltas arrived, then POST /cancel; times are absolute (performance.timeOrigin + performance.now()) ` +
          "in this process and in the probe host, whose demo model stamps its AbortSignal's abort event. Setups: embedded = a probe host with --role all on SQLite " +
          "(the in-process path: the scope is aborted before the store commit); cluster = the CLI's API process + a probe-host worker; " +
          "cluster, CLI worker = the same API process + the shipped CLI worker, whose only record of the stop is run_events.at of its run.cancel_requested " +
          "(Date.now() in the turn that aborted the scope: whole ms, floor)",
        demoModel: "npm start's defaults (no settings: 30 words/s, 120 words)",
        runs: { warmupPerSetup: WARMUP_RUNS, measuredPerSetupMax: MEASURED_RUNS, budgetPerSetupMs: SETUP_BUDGET_MS },
        clockCheck: {
          note: "probe host clock − this clock, by IPC ping-pong (fastest of 50); not applied; error ± rtt/2",
          embedded: { offsetMs: round(clock.embedded?.offsetMs ?? Number.NaN, 3), rttMs: round(clock.embedded?.rttMs ?? Number.NaN, 3) },
          clusterWorker: { offsetMs: round(clock.clusterWorker?.offsetMs ?? Number.NaN, 3), rttMs: round(clock.clusterWorker?.rttMs ?? Number.NaN, 3) },
        },
        embedded: summarizeSetup(embedded),
        clusterProbeWorker: {
          ...summarizeSetup(probed),
          runEventsAtMinusProbeAbortMs: {
            note: "the worker's run_events.at of run.cancel_requested minus the probe's abort time: validates the run_events proxy (expect −1…+1)",
            ...summarize(probedEventMinusAbort),
            min: round(Math.min(...probedEventMinusAbort), 3),
          },
        },
        clusterCliWorkerAfterIdle: {
          note: `each Stop after ${IDLE_MS} ms with nothing running (the pools close idle connections above their warm ones after 10 s)`,
          sentToCancelledOnSseMs: values(afterIdle, (sample) => round(sample.toCancelledEventMs)),
          sentToReplyMs: values(afterIdle, (sample) => round(sample.toReplyMs)),
        },
        clusterCliWorker: {
          ...summarizeSetup(shipped),
          sentToWorkerCancelEventMs: summarize(shippedToWorker),
          workerCancelRequestedToCancelledMs: { note: "run_events.at of run.cancelled − of run.cancel_requested: the worker's stop, record and report (1 ms res.)", ...summarize(shippedWorkerStop) },
        },
        children: childReports,
      },
    };
  },
};
