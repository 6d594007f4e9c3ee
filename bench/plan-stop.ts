import type { ClockOffset } from "./absolute-clock.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { startPlanProvider, type PlanProvider } from "./plan-provider.js";
import { abortBareOnce, IN_FLIGHT, stopPlanOnce, SUBTASK_COUNT, type StopSample } from "./plan-stop-sample.js";
import { openCluster, openEmbedded, type OpenDeployment } from "./plan-stop-setups.js";
import type { ChildReport } from "./serve-child.js";
import { percentile, round, summarize } from "./statistics.js";

/*
 * The Stop of a plan (DESIGN §11, issue 14): a `research` run with 50 subtasks and 8 provider
 * requests in flight, stopped by POST /v1/runs/{id}/cancel; from the moment that request is sent
 * to the moment the provider (a child process) saw the last of the 8 sockets close. Baseline: one
 * AbortController over 8 bare fetches to the same provider, aborted at the same point, in turn
 * with the Stops.
 */

/** The provider streams 2,000 chunks, one every 5 ms: 10 s, so the Stop always catches all 8. */
const SCENARIO = { chunks: 2_000, intervalMs: 5 };
/**
 * Where the Stop lands. Steady: every stream has written 40 chunks (≈ 200 ms), past the step
 * journal's first write of the 51 steps. Early: 3 chunks (≈ 15 ms), while that write may still be
 * in flight (the stop then waits for it on PostgreSQL: see docs/benchmarks.md).
 */
const STEADY_CHUNKS = 40;
const EARLY_CHUNKS = 3;
const WARMUP_RUNS = 5;
/** Steady Stops per setup, each with a bare abort beside it; fewer if the setup's budget runs out. */
const STEADY_RUNS = 100;
const EARLY_RUNS = 60;
/** Time for the steady Stops (warm-up included) and then for the early ones, per setup: at most 3.5 minutes in all. */
const STEADY_BUDGET_MS = { embedded: 80_000, cluster: 90_000 };
const EARLY_BUDGET_MS = 20_000;
const CLOCK_PINGS = 50;
const TARGET_P99_MS = { embedded: 10, cluster: 30 };

/** One setup's Stops: steady (with the bare aborts measured in turn with them) and early. */
interface SetupSamples {
  name: string;
  steady: StopSample[];
  bare: StopSample[];
  early: StopSample[];
  seconds: number;
}

/**
 * Warm-up, then a steady Stop and a bare abort in turn until STEADY_RUNS of each, then EARLY_RUNS
 * early Stops, each series within its budget.
 */
async function measureSetup(
  open: OpenDeployment,
  provider: PlanProvider,
  options: { offsetMs: number; steadyBudgetMs: number; log: (message: string) => void },
): Promise<SetupSamples> {
  const { offsetMs, log } = options;
  const { deployment } = open;
  const startedAt = performance.now();
  for (let index = 0; index < WARMUP_RUNS; index++) {
    await stopPlanOnce(deployment, provider, offsetMs, EARLY_CHUNKS);
    await abortBareOnce(provider, offsetMs, EARLY_CHUNKS);
  }
  const steady: StopSample[] = [];
  const bare: StopSample[] = [];
  const steadyDeadline = startedAt + options.steadyBudgetMs;
  while (steady.length < STEADY_RUNS && performance.now() < steadyDeadline) {
    steady.push(await stopPlanOnce(deployment, provider, offsetMs, STEADY_CHUNKS));
    bare.push(await abortBareOnce(provider, offsetMs, STEADY_CHUNKS));
  }
  const early: StopSample[] = [];
  const earlyDeadline = performance.now() + EARLY_BUDGET_MS;
  while (early.length < EARLY_RUNS && performance.now() < earlyDeadline) early.push(await stopPlanOnce(deployment, provider, offsetMs, EARLY_CHUNKS));
  const workerTimes = await open.workerCancelEventTimes?.();
  for (const sample of [...steady, ...early]) {
    const at = workerTimes?.get(sample.runId!);
    if (at !== undefined) sample.toWorkerCancelEventMs = at - sample.stopAt;
  }
  const seconds = round((performance.now() - startedAt) / 1000, 1);
  log(`plan-stop: ${deployment.name}: ${steady.length} steady Stops + ${bare.length} bare aborts, ${early.length} early Stops, in ${seconds} s (warm-up included)`);
  return { name: deployment.name, steady, bare, early, seconds };
}

const valuesOf = (samples: readonly StopSample[], of: (sample: StopSample) => number | undefined): number[] =>
  samples.map(of).filter((value): value is number => value !== undefined);
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
const p = (values: readonly number[], q: number) => round(percentile(values, q));
const toLastClose = (sample: StopSample) => sample.toLastCloseMs;

/** The JSON summary of a series (the bare series sends no cancel call and has no stages). */
function describe(samples: readonly StopSample[], isTidemark = true) {
  const summary = {
    runs: samples.length,
    stopToLastSocketClosedMs: summarize(valuesOf(samples, toLastClose)),
    stopToFirstSocketClosedMs: summarize(valuesOf(samples, (sample) => sample.toFirstCloseMs)),
    stopToFirstSignalAbortedMs: summarize(valuesOf(samples, (sample) => sample.toFirstAbortMs)),
    stopToLastSignalAbortedMs: summarize(valuesOf(samples, (sample) => sample.toLastAbortMs)),
    stopToWorkerCancelRequestedEventMs: summarize(valuesOf(samples, (sample) => sample.toWorkerCancelEventMs)),
    stopToLastCancelCallMs: summarize(valuesOf(samples, (sample) => sample.toLastCancelMs)),
    stopTo202Ms: summarize(valuesOf(samples, (sample) => sample.toReplyMs)),
    chunksAfterStop: summarize(valuesOf(samples, (sample) => sample.chunksAfter)),
    requestsAfterStop: sum(valuesOf(samples, (sample) => sample.requestsAfter)),
    inFlightAtStop: summarize(valuesOf(samples, (sample) => sample.inFlight)),
    cancelCalls: sum(valuesOf(samples, (sample) => sample.cancelCalls)),
    inFlightRequestsWithoutExactlyOneCancel: sum(valuesOf(samples, (sample) => sample.cancelMismatches)),
    rawStopToLastSocketClosedMs: samples.map((sample) => round(sample.toLastCloseMs)),
  };
  if (isTidemark) return summary;
  const { runs, stopToLastSocketClosedMs, stopToFirstSocketClosedMs, chunksAfterStop, requestsAfterStop, inFlightAtStop, rawStopToLastSocketClosedMs } = summary;
  return { runs, stopToLastSocketClosedMs, stopToFirstSocketClosedMs, chunksAfterStop, requestsAfterStop, inFlightAtStop, rawStopToLastSocketClosedMs };
}

/** A stage of the Stop's path, p50 and p99, when the setup measured it. */
function stageFigures(label: string, stage: string, values: readonly number[]): Figure[] {
  if (values.length === 0) return [];
  return [
    { label: `${label}: Stop sent → ${stage} p50`, value: p(values, 50), unit: "ms" },
    { label: `${label}: Stop sent → ${stage} p99`, value: p(values, 99), unit: "ms" },
  ];
}

/** The figures of one setup: the Stop against the bare abort of the same run, the early Stop, the counts and the stages. */
function setupFigures(label: string, setup: SetupSamples, targetMs: number): Figure[] {
  const steadyClose = valuesOf(setup.steady, toLastClose);
  const bareClose = valuesOf(setup.bare, toLastClose);
  const earlyClose = valuesOf(setup.early, toLastClose);
  const chunks = (samples: readonly StopSample[]) => valuesOf(samples, (sample) => sample.chunksAfter);
  const all = [...setup.steady, ...setup.early];
  const closed = `last of ${IN_FLIGHT} upstream sockets closed`;
  return [
    compared({ label: `${label}: Stop sent → ${closed} p50 (${setup.steady.length} runs)`, value: p(steadyClose, 50), unit: "ms" }, { label: "bare abort() p50", value: p(bareClose, 50) }),
    {
      ...compared({ label: `${label}: Stop sent → ${closed} p99 (${setup.steady.length} runs)`, value: p(steadyClose, 99), unit: "ms" }, { label: "bare abort() p99", value: p(bareClose, 99) }),
      target: `≤ ${targetMs} ms`,
      isMet: percentile(steadyClose, 99) <= targetMs,
    },
    { label: `${label}, early Stop (after ${EARLY_CHUNKS} chunks): → ${closed} p50 (${setup.early.length} runs)`, value: p(earlyClose, 50), unit: "ms" },
    { label: `${label}, early Stop: → ${closed} p99`, value: p(earlyClose, 99), unit: "ms", target: `≤ ${targetMs} ms`, isMet: percentile(earlyClose, 99) <= targetMs },
    {
      label: `${label}: requests started after the Stop (all ${all.length} runs)`,
      value: sum(valuesOf(all, (sample) => sample.requestsAfter)),
      unit: "requests",
      target: "0",
      isMet: all.every((sample) => sample.requestsAfter === 0),
    },
    {
      label: `${label}: chunks written after the Stop, ${IN_FLIGHT} streams together, p50`,
      value: p(chunks(setup.steady), 50),
      unit: "chunks",
      baseline: { label: "bare abort() p50", value: p(chunks(setup.bare), 50) },
    },
    {
      label: `${label}: chunks written after the Stop, ${IN_FLIGHT} streams together, max`,
      value: Math.max(...chunks(setup.steady)),
      unit: "chunks",
      baseline: { label: "bare abort() max", value: Math.max(...chunks(setup.bare)) },
    },
    {
      label: `${label}: in-flight requests without exactly one cancel call (of ${IN_FLIGHT * all.length})`,
      value: sum(valuesOf(all, (sample) => sample.cancelMismatches)),
      unit: "requests",
      target: "0",
      isMet: all.every((sample) => sample.cancelMismatches === 0),
    },
    ...stageFigures(label, "202 read", valuesOf(setup.steady, (sample) => sample.toReplyMs)),
    ...stageFigures(label, "last of the 8 generations' signals aborted (probe in process)", valuesOf(setup.steady, (sample) => sample.toLastAbortMs)),
    ...stageFigures(label, "the worker's run.cancel_requested (run_events.at, whole ms)", valuesOf(setup.steady, (sample) => sample.toWorkerCancelEventMs)),
    ...stageFigures(label, "last cancel call arrived", valuesOf(setup.steady, (sample) => sample.toLastCancelMs)),
  ];
}

/** Throws when a Stop let a request start or did not catch all 8 in flight: the figures would be of something else. */
function checkCounts(setups: readonly SetupSamples[]): void {
  for (const setup of setups) {
    const all = [...setup.steady, ...setup.early];
    const after = sum(valuesOf(all, (sample) => sample.requestsAfter));
    const notEight = all.filter((sample) => sample.inFlight !== IN_FLIGHT).length;
    if (after > 0 || notEight > 0) {
      const close = valuesOf(setup.steady, toLastClose);
      throw new Error(
        `plan-stop FAILED on ${setup.name}: ${after} request(s) started after the Stop (must be 0), ` +
          `${notEight} of ${all.length} Stops did not find ${IN_FLIGHT} requests in flight; ` +
          `steady Stop → last socket closed p50 ${p(close, 50)} ms, p99 ${p(close, 99)} ms`,
      );
    }
  }
}

/** POST /cancel of a 50-subtask plan with 8 requests in flight → the provider saw the last of the 8 sockets close. */
export const planStop: Benchmark = {
  name: "plan-stop",
  summary:
    `research run (${SUBTASK_COUNT} subtasks, ${IN_FLIGHT} in flight, provider in a child process): POST /v1/runs/{id}/cancel sent → the last of the ${IN_FLIGHT} upstream sockets closed, ` +
    "chunks and requests after the Stop; embedded (SQLite) and API + worker processes (PostgreSQL); baseline one AbortController over 8 bare fetches",
  async run({ log }): Promise<BenchmarkResult> {
    const provider = await startPlanProvider(SCENARIO);
    const clock: Record<string, ClockOffset> = {};
    const setups: SetupSamples[] = [];
    const children: ChildReport[] = [];
    try {
      clock.start = await provider.clockOffset(CLOCK_PINGS);
      const openers = [
        { open: () => openEmbedded(provider), steadyBudgetMs: STEADY_BUDGET_MS.embedded },
        { open: () => openCluster(provider, (message) => log(`plan-stop: ${message}`)), steadyBudgetMs: STEADY_BUDGET_MS.cluster },
      ];
      for (const { open, steadyBudgetMs } of openers) {
        const opened = await open();
        try {
          setups.push(await measureSetup(opened, provider, { offsetMs: clock.start.offsetMs, steadyBudgetMs, log }));
        } finally {
          children.push(...(await opened.close()));
        }
      }
      clock.end = await provider.clockOffset(CLOCK_PINGS);
    } finally {
      await provider.close();
    }
    checkCounts(setups);
    const [embedded, cluster] = setups as [SetupSamples, SetupSamples];
    return {
      figures: [...setupFigures("embedded", embedded, TARGET_P99_MS.embedded), ...setupFigures("cluster", cluster, TARGET_P99_MS.cluster)],
      details: {
        scenario: SCENARIO,
        subtasks: SUBTASK_COUNT,
        maxParallel: IN_FLIGHT,
        chunksBeforeStop: { steady: STEADY_CHUNKS, early: EARLY_CHUNKS },
        runs: { warmupPerSetup: WARMUP_RUNS, steadyPerSetupMax: STEADY_RUNS, earlyPerSetupMax: EARLY_RUNS, steadyBudgetMs: STEADY_BUDGET_MS, earlyBudgetMs: EARLY_BUDGET_MS },
        method:
          "each run on a fresh thread: POST a research run (config.subtasks: 50 strings, max_parallel 8), wait until the provider child has 8 streaming requests " +
          `of this run open with ≥ ${STEADY_CHUNKS} (steady) or ${EARLY_CHUNKS} (early) chunks each, then POST /v1/runs/{id}/cancel. Stop = absoluteNow() just before that fetch. ` +
          "The child records each request's arrival, chunk times and response close, and each cancel call, as performance.timeOrigin + performance.now(); the clock " +
          "offset (child − this, by IPC ping-pong) is subtracted. Then the benchmark waits for the 8 closes and 8 cancel calls, for the run's end (status cancelled), " +
          "and reads the child's record of every request carrying the run's marker. Bare: 8 fetches (the lean reader's body) under one AbortController, " +
          "aborted at the steady point, in turn with the steady Stops. Model: withRetries(createOpenAICompatibleModel({ cancel: { url } })) in process, behind an abort " +
          "probe; TIDEMARK_MODEL=openai-compatible:bench with TIDEMARK_OPENAI_BASE_URL and TIDEMARK_PROVIDER_CANCEL_URL for the CLI processes",
        clockCheck: {
          note: "provider child clock − this clock (fastest of 50 pings); the start offset is applied; error ± rtt/2; the end one shows the drift",
          start: { offsetMs: round(clock.start!.offsetMs, 4), rttMs: round(clock.start!.rttMs, 4) },
          end: { offsetMs: round(clock.end!.offsetMs, 4), rttMs: round(clock.end!.rttMs, 4) },
        },
        setups: Object.fromEntries(
          setups.map((setup) => [setup.name, { seconds: setup.seconds, steady: describe(setup.steady), bare: describe(setup.bare, false), early: describe(setup.early) }]),
        ),
        children,
      },
    };
  },
};
