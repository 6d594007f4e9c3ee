import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createOpenAICompatibleModel, withRetries } from "../src/models/index.js";
import { silentLogger, type ChatModel } from "../src/runtime/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { absoluteNow, type ClockOffset } from "./absolute-clock.js";
import { createTempDir } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { abortBareOnce, MARKER_PATTERN, runChain, type BargeInContext, type TurnPlan, type TurnSample } from "./live-barge-in-turn.js";
import { observeLiveSockets } from "./live-socket-observer.js";
import { startPlanProvider } from "./plan-provider.js";
import { percentile, round, summarize } from "./statistics.js";

/*
 * Barge-in on the live endpoint (DESIGN §12, issue 15): an embedded Tidemark (SQLite, the lean
 * OpenAI-compatible reader against the test provider in a child process) and a live client in
 * this process. Each turn streams a slow answer; the client acks K characters, then cuts the turn
 * with a barge-in (user.started_speaking + user.stopped_speaking with a transcript, which is the
 * next turn) or an emergency_stop. Measured from the moment the cutting frame reached the server
 * (live-socket-observer.ts): the last output.delta of the cut turn sent, the upstream socket closed
 * (the provider child's clock), and the published text against the acked prefix. Baseline, in turn
 * with the cuts: one bare fetch to the same provider, aborted by an AbortController.
 */

/** 2,000 chunks, one every 5 ms (10 s): every cut lands mid-answer. */
const SCENARIO = { chunks: 2_000, intervalMs: 5 };
/** The K of successive cuts, in turn (a chunk `wN ` is 3–5 characters). */
const ACKED_CHARS = [0, 3, 17, 42, 64, 99, 128, 160, 200, 7, 250, 31];
const TURNS_PER_CHAIN = 25;
const CHAINS = 10;
/** Every fifth turn of a chain is cut by an emergency stop (a chain's last one too): 200 barge-ins, 50 emergency stops. */
const EMERGENCY_EVERY = 5;
const WARMUP_TURNS = 5;
/** Chains start only within this budget (a chain takes about 10 s). */
const BUDGET_MS = 150_000;
const BARE_CHUNKS = 5;
const CLOCK_PINGS = 50;
const TARGET_P99_MS = 20;

function plansOf(count: number, offset: number): TurnPlan[] {
  return Array.from({ length: count }, (_, index) => ({
    kind: (index + 1) % EMERGENCY_EVERY === 0 || index === count - 1 ? "emergency_stop" : "barge_in",
    ackedChars: ACKED_CHARS[(offset + index) % ACKED_CHARS.length]!,
  }));
}

/**
 * Stamps absoluteNow() when a generation whose last user message carries a turn's marker sees its
 * signal abort; the listener is added before the model's own.
 */
function withAbortProbe(inner: ChatModel): { model: ChatModel; abortTime(marker: string): number | undefined } {
  const aborts = new Map<string, number>();
  const model: ChatModel = {
    id: inner.id,
    stream(request, options) {
      const lastUser = request.messages.findLast((message) => message.role === "user");
      const marker = MARKER_PATTERN.exec(lastUser?.content ?? "")?.[0];
      if (marker !== undefined) options.signal.addEventListener("abort", () => aborts.set(marker, absoluteNow()), { once: true });
      return inner.stream(request, options);
    },
    ...(inner.title ? { title: (message: string, options: { signal: AbortSignal }) => inner.title!(message, options) } : {}),
  };
  return {
    model,
    abortTime(marker) {
      const at = aborts.get(marker);
      aborts.delete(marker);
      return at;
    },
  };
}

const valuesOf = (samples: readonly TurnSample[], of: (sample: TurnSample) => number | undefined): number[] =>
  samples.map(of).filter((value): value is number => value !== undefined && Number.isFinite(value));
const p = (values: readonly number[], q: number) => round(percentile(values, q));
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

function describe(samples: readonly TurnSample[]) {
  return {
    turns: samples.length,
    cutFrameToLastDeltaSentMs: summarize(valuesOf(samples, (sample) => sample.toLastDeltaSentMs)),
    cutFrameToLastDeltaSentRawMs: summarize(valuesOf(samples, (sample) => sample.lastDeltaSentRawMs)),
    deltasSentAfterCutFrame: sum(valuesOf(samples, (sample) => sample.deltasSentAfterCut)),
    cutFrameToUpstreamClosedMs: summarize(valuesOf(samples, (sample) => sample.toUpstreamClosedMs)),
    cutFrameToSignalAbortedMs: summarize(valuesOf(samples, (sample) => sample.toSignalAbortedMs)),
    cutFrameToInterruptedSentMs: summarize(valuesOf(samples, (sample) => sample.toInterruptedSentMs)),
    cutFrameToPublishedSentMs: summarize(valuesOf(samples, (sample) => sample.toPublishedSentMs)),
    cutFrameToTurnEndedSentMs: summarize(valuesOf(samples, (sample) => sample.toTurnEndedSentMs)),
    speechFrameToCutFrameMs: summarize(valuesOf(samples, (sample) => sample.speechToCutFrameMs)),
    clientCutSentToServerReceivedMs: summarize(valuesOf(samples, (sample) => sample.clientToServerMs)),
    clientCutSentToInterruptedReceivedMs: summarize(valuesOf(samples, (sample) => sample.clientToInterruptedMs)),
    chunksAfterCutFrame: summarize(valuesOf(samples, (sample) => sample.chunksAfterCut)),
    cancelCalls: summarize(valuesOf(samples, (sample) => sample.cancelCalls)),
    ackedChars: summarize(valuesOf(samples, (sample) => sample.ackedChars)),
    driftChars: summarize(valuesOf(samples, (sample) => sample.driftChars)),
    historyDriftChars: summarize(valuesOf(samples, (sample) => sample.historyDriftChars)),
    perTurn: {
      columns: ["K", "cut frame → signal aborted ms", "→ upstream closed ms", "→ turn.ended sent ms", "chunks after"],
      rows: samples.map((sample) => [sample.ackedChars, round(sample.toSignalAbortedMs ?? Number.NaN, 2), round(sample.toUpstreamClosedMs, 2), round(sample.toTurnEndedSentMs, 2), sample.chunksAfterCut]),
    },
  };
}

/** What must hold in every turn, counted over `samples`. */
function violations(samples: readonly TurnSample[]) {
  return {
    drift: samples.filter((sample) => sample.driftChars !== 0).length,
    historyDrift: samples.filter((sample) => sample.historyDriftChars !== 0).length,
    notMarkedInterrupted: samples.filter((sample) => sample.ackedChars > 0 && (sample.isMarkedInterrupted !== true || sample.isHistoryMarkedInterrupted !== true)).length,
    heardCharsNotK: samples.filter((sample) => sample.heardChars !== sample.ackedChars).length,
    notCancelled: samples.filter((sample) => sample.status !== "cancelled").length,
    deltasAfterInterrupted: sum(samples.map((sample) => sample.deltasReceivedAfterInterrupted)),
    deltasSentAfterCutFrame: sum(samples.map((sample) => sample.deltasSentAfterCut)),
    notOneCancelCall: samples.filter((sample) => sample.cancelCalls !== 1).length,
  };
}

function cutFigures(label: string, samples: readonly TurnSample[], bare: readonly number[]): Figure[] {
  const lastDelta = valuesOf(samples, (sample) => sample.toLastDeltaSentMs);
  const closed = valuesOf(samples, (sample) => sample.toUpstreamClosedMs);
  const aborted = valuesOf(samples, (sample) => sample.toSignalAbortedMs);
  const interrupted = valuesOf(samples, (sample) => sample.toInterruptedSentMs);
  const ended = valuesOf(samples, (sample) => sample.toTurnEndedSentMs);
  const client = valuesOf(samples, (sample) => sample.clientToInterruptedMs);
  const toServer = valuesOf(samples, (sample) => sample.clientToServerMs);
  const n = samples.length;
  return [
    { label: `${label}: frame received → last output.delta of the cut turn sent, p50 (${n} turns)`, value: p(lastDelta, 50), unit: "ms" },
    { label: `${label}: the same, p99`, value: p(lastDelta, 99), unit: "ms" },
    compared({ label: `${label}: frame received → upstream socket closed, p50 (${n} turns)`, value: p(closed, 50), unit: "ms" }, { label: "bare abort() p50", value: p(bare, 50) }),
    {
      ...compared({ label: `${label}: frame received → upstream socket closed, p99`, value: p(closed, 99), unit: "ms" }, { label: "bare abort() p99", value: p(bare, 99) }),
      target: `≤ ${TARGET_P99_MS} ms`,
      isMet: percentile(closed, 99) <= TARGET_P99_MS,
    },
    { label: `${label}: frame received → the generation's signal aborted (probe), p50`, value: p(aborted, 50), unit: "ms" },
    { label: `${label}: frame received → turn.interrupted sent, p50`, value: p(interrupted, 50), unit: "ms" },
    { label: `${label}: frame received → turn.ended sent, p50`, value: p(ended, 50), unit: "ms" },
    { label: `${label}: frame received → turn.ended sent, p99`, value: p(ended, 99), unit: "ms" },
    { label: `${label}: client: frame sent → received by the server's ws, p50`, value: p(toServer, 50), unit: "ms" },
    { label: `${label}: client: frame sent → received by the server's ws, p99`, value: p(toServer, 99), unit: "ms" },
    { label: `${label}: client: frame sent → turn.interrupted received, p50`, value: p(client, 50), unit: "ms" },
    { label: `${label}: client: frame sent → turn.interrupted received, p99`, value: p(client, 99), unit: "ms" },
  ];
}

/** Barge-in and emergency stop on the live endpoint: cut frame received → last delta sent, upstream closed, and the published prefix's drift. */
export const liveBargeIn: Benchmark = {
  name: "live-barge-in",
  summary:
    `live endpoint, embedded (SQLite, provider in a child process): a turn cut after K acked characters by a barge-in or an emergency_stop; the cutting frame received → ` +
    "last output.delta sent and upstream socket closed; the published text's drift from the acked prefix; baseline one bare fetch aborted",
  async run({ log }): Promise<BenchmarkResult> {
    const provider = await startPlanProvider(SCENARIO);
    const temp = createTempDir("live-barge-in");
    const observer = observeLiveSockets();
    const clock: Record<string, ClockOffset> = {};
    const samples: TurnSample[] = [];
    const bare: { toUpstreamClosedMs: number; chunksAfterCut: number }[] = [];
    let seconds = 0;
    // The event loop the server, the client and the bare fetches share, over the measured chains.
    const loopDelay = monitorEventLoopDelay({ resolution: 1 });
    try {
      const probe = withAbortProbe(withRetries(createOpenAICompatibleModel({ model: "bench", baseURL: provider.url, cancel: { url: provider.cancelUrl } })));
      const tidemark = await startTidemark({ dbPath: join(temp.dir, "live-barge-in.db"), port: 0, model: probe.model, logger: silentLogger });
      try {
        clock.start = await provider.clockOffset(CLOCK_PINGS);
        const context: BargeInContext = { url: tidemark.url, provider, offsetMs: clock.start.offsetMs, observer, abortTime: probe.abortTime };
        await runChain(context, plansOf(WARMUP_TURNS, 0), async () => void (await abortBareOnce(provider, clock.start!.offsetMs, BARE_CHUNKS)));
        const startedAt = performance.now();
        loopDelay.enable();
        for (let chain = 0; chain < CHAINS && performance.now() - startedAt < BUDGET_MS; chain++) {
          const bareOnce = async () => void bare.push(await abortBareOnce(provider, clock.start!.offsetMs, BARE_CHUNKS));
          samples.push(...(await runChain(context, plansOf(TURNS_PER_CHAIN, chain * TURNS_PER_CHAIN), bareOnce)));
          log(`live-barge-in: chain ${chain + 1}/${CHAINS}: ${samples.length} turns, ${bare.length} bare aborts`);
        }
        loopDelay.disable();
        seconds = round((performance.now() - startedAt) / 1000, 1);
        clock.end = await provider.clockOffset(CLOCK_PINGS);
      } finally {
        await tidemark.close();
      }
    } finally {
      observer.restore();
      await provider.close();
      temp.remove();
    }
    const bargeIns = samples.filter((sample) => sample.kind === "barge_in");
    const stops = samples.filter((sample) => sample.kind === "emergency_stop");
    const bareClosed = bare.map((sample) => sample.toUpstreamClosedMs);
    const broken = violations(samples);
    const drift = valuesOf(samples, (sample) => sample.driftChars);
    return {
      figures: [
        ...cutFigures("barge-in (user.stopped_speaking)", bargeIns, bareClosed),
        ...cutFigures("emergency_stop", stops, bareClosed),
        {
          label: `published text's drift from the acked prefix, max over all ${samples.length} turns (turns with drift: ${broken.drift})`,
          value: drift.length > 0 ? Math.max(...drift) : Number.NaN,
          unit: "chars",
          target: "0 in every turn",
          isMet: samples.length > 0 && broken.drift === 0,
        },
        {
          label: "turns whose history, heard_chars, interrupted flag or status disagree; deltas received after turn.interrupted",
          value: broken.historyDrift + broken.heardCharsNotK + broken.notMarkedInterrupted + broken.notCancelled + broken.deltasAfterInterrupted,
          unit: "turns + deltas",
          target: "0",
          isMet: broken.historyDrift + broken.heardCharsNotK + broken.notMarkedInterrupted + broken.notCancelled + broken.deltasAfterInterrupted === 0,
        },
        {
          label: "upstream chunks written after the cut frame, p50 (max)",
          value: p(valuesOf(samples, (sample) => sample.chunksAfterCut), 50),
          unit: "chunks",
          baseline: { label: "bare abort() p50", value: p(bare.map((sample) => sample.chunksAfterCut), 50) },
        },
      ],
      details: {
        scenario: SCENARIO,
        turns: { chains: CHAINS, perChain: TURNS_PER_CHAIN, emergencyEvery: EMERGENCY_EVERY, warmup: WARMUP_TURNS, budgetMs: BUDGET_MS, ackedChars: ACKED_CHARS, measuredSeconds: seconds },
        method:
          "each chain: a fresh thread and live session, session.update min_interruption_ms 0, then turns; each turn waits until the client received K + 12 characters, " +
          "sends playback K, then user.started_speaking + user.stopped_speaking (a new transcript: the next turn) or emergency_stop, back to back. The cut frame's arrival " +
          "is when ws delivered it to the session (a listener added before the product's, in this process); a frame's send is when the session called send(). " +
          "Upstream close: the provider child's record (performance.timeOrigin + performance.now()), minus the clock offset. Drift: message.published content (none when K = 0) " +
          "against the first K characters the client received, and the thread's history likewise. Bare: one fetch (the lean reader's body) read until 5 content chunks, " +
          "then AbortController.abort(), once after each turn (while the next turn starts). Model: withRetries(createOpenAICompatibleModel({ cancel: { url } })) behind an abort probe",
        clockCheck: {
          note: "provider child clock − this clock (fastest of 50 pings); the start offset is applied",
          start: clock.start && { offsetMs: round(clock.start.offsetMs, 4), rttMs: round(clock.start.rttMs, 4) },
          end: clock.end && { offsetMs: round(clock.end.offsetMs, 4), rttMs: round(clock.end.rttMs, 4) },
        },
        eventLoopDelayMs: {
          note: "monitorEventLoopDelay (resolution 1 ms) over the measured chains: how late this process's event loop ran, which any frame's handling may wait for",
          p50: round(loopDelay.percentile(50) / 1e6),
          p99: round(loopDelay.percentile(99) / 1e6),
          max: round(loopDelay.max / 1e6),
        },
        violations: broken,
        bargeIn: describe(bargeIns),
        emergencyStop: describe(stops),
        bare: {
          aborts: bare.length,
          abortToUpstreamClosedMs: summarize(bareClosed),
          chunksAfterAbort: summarize(bare.map((sample) => sample.chunksAfterCut)),
          rawAbortToUpstreamClosedMs: bareClosed.map((value) => round(value)),
        },
      },
    };
  },
};
