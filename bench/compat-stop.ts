import { join } from "node:path";
import type { ClockOffset } from "./absolute-clock.js";
import { createTempDir } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { LAYERS, type Layer } from "./compat-clients.js";
import { CHUNKS_BEFORE_STOP, DISCONNECT_GRACE_MS, disconnectBatch, stopOnce, type StopSample } from "./compat-stop-sample.js";
import { startPlanProvider } from "./plan-provider.js";
import { startServe, stopAndReport, type ChildReport } from "./serve-child.js";
import { percentile, round, summarize } from "./statistics.js";

/*
 * Issue 16: Stop → the upstream socket closed, through each layer's own cancel, next to the native
 * cancel, in one run. A `tidemark serve` child (SQLite) runs the lean reader with its explicit
 * provider cancel call against the test provider (its own process, 2,000 chunks at 5 ms); the
 * provider records when each request's response closed and each cancel call, on its own clock.
 */

const SCENARIO = { chunks: 2_000, intervalMs: 5 };
const WARMUP_PER_LAYER = 3;
/** Explicit Stops per layer, one at a time, the layers in turn; fewer if the budget runs out. */
const STOPS_PER_LAYER = 100;
const EXPLICIT_BUDGET_MS = 80_000;
/** AG-UI disconnects: batches of 25 runs, their clients leaving 40 ms apart; 4 batches. */
const DISCONNECT_BATCHES = 4;
const DISCONNECT_BATCH_SIZE = 25;
const DISCONNECT_SPACING_MS = 40;
const CLOCK_PINGS = 50;

/** The rows: each layer's explicit Stop, and AG-UI's client disconnect. */
type Row = Layer | "ag-ui-disconnect";

const ROW_LABELS: Record<Row, string> = {
  native: "native POST /v1/runs/{id}/cancel",
  openai: "OpenAI POST /v1/responses/{id}/cancel",
  langgraph: "LangGraph POST …/runs/{r}/cancel?wait=1",
  "ag-ui": "AG-UI POST /ag-ui/runs/{id}/cancel",
  "ag-ui-disconnect": "AG-UI client abort (disconnect + grace)",
};

const valuesOf = (samples: readonly StopSample[], of: (sample: StopSample) => number | undefined) =>
  samples.map(of).filter((value): value is number => value !== undefined);
const p = (values: readonly number[], q: number) => round(percentile(values, q));
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
const toClose = (sample: StopSample) => sample.toCloseMs;

function describe(samples: readonly StopSample[]) {
  return {
    stops: samples.length,
    stopToUpstreamClosedMs: summarize(valuesOf(samples, toClose)),
    stopToReplyMs: summarize(valuesOf(samples, (sample) => sample.toReplyMs)),
    replyStatuses: [...new Set(valuesOf(samples, (sample) => sample.replyStatus))],
    chunksAfterStop: summarize(valuesOf(samples, (sample) => sample.chunksAfterStop)),
    deltasAfterAcceptedCancel: sum(valuesOf(samples, (sample) => sample.deltasAfterCancel)),
    clientDeltasPastAcceptedCancel: sum(valuesOf(samples, (sample) => sample.clientDeltasPastCancel)),
    stopsWithoutExactlyOneUpstreamCancel: samples.filter((sample) => sample.cancelCalls !== 1).length,
    requestsAfterStop: sum(valuesOf(samples, (sample) => sample.requestsAfterStop)),
    terminals: Object.fromEntries([...new Set(samples.map((sample) => sample.terminal))].map((terminal) => [terminal, samples.filter((s) => s.terminal === terminal).length])),
    rawStopToUpstreamClosedMs: samples.map((sample) => round(sample.toCloseMs)),
  };
}

/** Stop → upstream socket closed through each compatibility layer's cancel, vs the native cancel. */
export const compatStop: Benchmark = {
  name: "compat-stop",
  summary:
    `Stop after chunk ${CHUNKS_BEFORE_STOP} of a 5 ms/chunk stream (tidemark serve child, provider in its own process): Stop sent → upstream socket closed through the OpenAI, LangGraph and AG-UI cancels vs the native cancel; ` +
    "AG-UI's client disconnect (after the grace period) apart; deltas after the accepted cancel and upstream cancel calls counted",
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("compat-stop");
    const provider = await startPlanProvider(SCENARIO);
    const samples: Record<Row, StopSample[]> = { native: [], openai: [], langgraph: [], "ag-ui": [], "ag-ui-disconnect": [] };
    const clock: Record<string, ClockOffset> = {};
    let serverReport: ChildReport | undefined;
    const startedAt = performance.now();
    try {
      clock.start = await provider.clockOffset(CLOCK_PINGS);
      const offsetMs = clock.start.offsetMs;
      const server = await startServe({
        name: "serve",
        role: "all",
        db: join(temp.dir, "compat-stop.db"),
        outbox: join(temp.dir, "outbox.db"),
        env: { TIDEMARK_MODEL: "openai-compatible:bench", TIDEMARK_OPENAI_BASE_URL: provider.url, TIDEMARK_PROVIDER_CANCEL_URL: provider.cancelUrl },
      });
      try {
        for (let index = 0; index < WARMUP_PER_LAYER; index++) for (const layer of LAYERS) await stopOnce(layer, server.url, provider, offsetMs);
        log(`compat-stop: warmed up (${WARMUP_PER_LAYER} Stops per layer)`);
        const deadline = performance.now() + EXPLICIT_BUDGET_MS;
        for (let index = 0; index < STOPS_PER_LAYER && performance.now() < deadline; index++) {
          // Rotate the order, so that drift in the machine's load hits every layer alike.
          for (let offset = 0; offset < LAYERS.length; offset++) {
            const layer = LAYERS[(index + offset) % LAYERS.length]!;
            samples[layer].push(await stopOnce(layer, server.url, provider, offsetMs));
          }
          if ((index + 1) % 25 === 0) log(`compat-stop: ${index + 1} explicit Stops per layer`);
        }
        for (let batch = 0; batch < DISCONNECT_BATCHES; batch++) {
          samples["ag-ui-disconnect"].push(...(await disconnectBatch(server.url, provider, offsetMs, DISCONNECT_BATCH_SIZE, DISCONNECT_SPACING_MS)));
          log(`compat-stop: AG-UI disconnect batch ${batch + 1}/${DISCONNECT_BATCHES}`);
        }
        clock.end = await provider.clockOffset(CLOCK_PINGS);
      } finally {
        serverReport = await stopAndReport(server, log);
      }
    } finally {
      await provider.close();
      temp.remove();
    }
    const all = Object.values(samples).flat();
    const close = (row: Row) => valuesOf(samples[row], toClose);
    const native = close("native");
    const nativeP50 = { label: "native cancel p50", value: p(native, 50) };
    const nativeP99 = { label: "native cancel p99", value: p(native, 99) };
    const figures: Figure[] = [
      { label: `${ROW_LABELS.native}: Stop sent → upstream socket closed p50 (${native.length} Stops)`, value: nativeP50.value, unit: "ms" },
      { label: `${ROW_LABELS.native}: the same, p99`, value: nativeP99.value, unit: "ms" },
    ];
    for (const layer of LAYERS.slice(1)) {
      figures.push(
        compared({ label: `${ROW_LABELS[layer]}: Stop sent → upstream socket closed p50 (${close(layer).length} Stops)`, value: p(close(layer), 50), unit: "ms" }, nativeP50),
        compared({ label: `${ROW_LABELS[layer]}: the same, p99`, value: p(close(layer), 99), unit: "ms" }, nativeP99),
      );
    }
    const disconnect = close("ag-ui-disconnect");
    const afterGrace = disconnect.map((value) => value - DISCONNECT_GRACE_MS);
    figures.push(
      { label: `${ROW_LABELS["ag-ui-disconnect"]}: abort() → upstream socket closed p50 (${disconnect.length} Stops)`, value: p(disconnect, 50), unit: "ms" },
      { label: `${ROW_LABELS["ag-ui-disconnect"]}: the same, p99`, value: p(disconnect, 99), unit: "ms" },
      compared({ label: `AG-UI disconnect: the same minus the ${DISCONNECT_GRACE_MS / 1000} s grace, p50`, value: p(afterGrace, 50), unit: "ms" }, nativeP50),
      compared({ label: `AG-UI disconnect: the same minus the grace, p99`, value: p(afterGrace, 99), unit: "ms" }, nativeP99),
    );
    for (const row of Object.keys(samples) as Row[]) {
      if (row === "ag-ui-disconnect") continue;
      figures.push({ label: `${ROW_LABELS[row]}: Stop sent → reply read p50`, value: p(valuesOf(samples[row], (sample) => sample.toReplyMs), 50), unit: "ms" });
    }
    const count = (label: string, of: (sample: StopSample) => number): Figure => {
      const value = sum(all.map(of));
      return { label: `${label} (all ${all.length} Stops)`, value, unit: "", target: "0", isMet: value === 0 };
    };
    figures.push(
      count("deltas in the run's stream after its accepted cancel (run.cancel_requested)", (sample) => sample.deltasAfterCancel),
      count("text deltas a layer's client received past the accepted cancel", (sample) => sample.clientDeltasPastCancel),
      count("Stops without exactly one upstream cancel call", (sample) => (sample.cancelCalls === 1 ? 0 : 1)),
      count("provider requests started after the Stop", (sample) => sample.requestsAfterStop),
      count("runs that did not end run.cancelled", (sample) => (sample.terminal.startsWith("run.cancelled") ? 0 : 1)),
    );
    return {
      figures,
      details: {
        scenario: SCENARIO,
        chunksBeforeStop: CHUNKS_BEFORE_STOP,
        runs: {
          warmupPerLayer: WARMUP_PER_LAYER,
          stopsPerLayerMax: STOPS_PER_LAYER,
          explicitBudgetMs: EXPLICIT_BUDGET_MS,
          disconnect: { batches: DISCONNECT_BATCHES, batchSize: DISCONNECT_BATCH_SIZE, spacingMs: DISCONNECT_SPACING_MS, graceMs: DISCONNECT_GRACE_MS },
        },
        seconds: round((performance.now() - startedAt) / 1000, 1),
        method:
          "each explicit Stop: a fresh run through the layer (its stream open in the bench process), wait until the provider child has written " +
          `${CHUNKS_BEFORE_STOP} chunks to the run's request, then the layer's cancel request; Stop = absoluteNow() just before that fetch. ` +
          "The provider records chunk times, the response's close and each cancel call (clock offset by IPC ping-pong subtracted). After the run ended, its native " +
          "event stream is replayed (GET /v1/runs/{id}/events) to count the message.delta events after run.cancel_requested and the deltas before it, which the layer's " +
          "client must not have exceeded. AG-UI disconnect: 25 runs at once, their clients abort() 40 ms apart; the server cancels each after the grace period.",
        clockCheck: {
          note: "provider child clock − this clock (fastest of 50 pings); the start offset is applied; error ± rtt/2",
          start: clock.start && { offsetMs: round(clock.start.offsetMs, 4), rttMs: round(clock.start.rttMs, 4) },
          end: clock.end && { offsetMs: round(clock.end.offsetMs, 4), rttMs: round(clock.end.rttMs, 4) },
        },
        rows: Object.fromEntries((Object.keys(samples) as Row[]).map((row) => [row, describe(samples[row])])),
        server: serverReport,
      },
    };
  },
};
