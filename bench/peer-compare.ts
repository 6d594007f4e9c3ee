import { cpuSince, takeCpuSnapshot } from "./cpu-accounting.js";
import { nodeOnCpu, STOP_CPUS } from "./cpu-pinning.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { runPeerChild, type ChildOutcome, type StopSample } from "./peer-compare-run.js";
import { BACK_TO_BACK, PACED, SCENARIOS, SHAPE_NAMES, STOP, type ShapeName } from "./peer-shapes.js";
import { PEER_NAMES, type PeerName } from "./peer-stream.js";
import { startRemoteProvider } from "./remote-provider.js";
import { median, percentile, round, summarize } from "./statistics.js";

/**
 * Issue 18's peer comparison: the same mock provider in its own process, three shapes, every
 * peer in a fresh process, figures as ratios to the raw floor of the same run. The raw floor runs
 * first and again last (its samples pooled), so drift in the machine's load shows and is shared.
 */

const ORDER: readonly PeerName[] = [...PEER_NAMES, "raw"];
const CLOCK_PINGS = 50;

const LABELS: Record<PeerName, string> = {
  raw: "raw fetch + eventsource-parser",
  openai: "`openai` client",
  "ai-sdk": "AI SDK streamText",
  langgraph: "LangGraph.js (messages)",
  tidemark: "Tidemark server + SSE client",
  relay: "a bare relay (server + SSE client, no store; reference)",
};

/** Every peer a result is kept for: the compared ones and the relay (paced shapes only). */
const RESULT_PEERS: readonly PeerName[] = [...PEER_NAMES, "relay"];

/** What one peer gave on one shape: its children's outcomes (two for the raw floor), or the failure. */
interface PeerResult {
  outcomes: ChildOutcome[];
  errors: string[];
}

type Results = Record<ShapeName, Record<PeerName, PeerResult>>;

const emptyResults = (): Results =>
  Object.fromEntries(
    SHAPE_NAMES.map((shape) => [shape, Object.fromEntries(RESULT_PEERS.map((peer): [PeerName, PeerResult] => [peer, { outcomes: [], errors: [] }]))]),
  ) as unknown as Results;

const cpuSamples = (result: PeerResult) => result.outcomes.flatMap((outcome) => outcome.report.cpuMs);
const stopSamples = (result: PeerResult): StopSample[] => result.outcomes.flatMap((outcome) => outcome.stops);
const closeTimes = (result: PeerResult) => stopSamples(result).map((sample) => sample.stopToCloseMs);
const meanOf = (values: readonly number[]) => (values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length);

/** A peer that failed on a shape: one row saying so, instead of failing the whole bench. */
function errorFigure(shape: ShapeName, peer: PeerName, result: PeerResult): Figure[] {
  if (result.errors.length === 0) return [];
  return [{ label: `${shape}: ${LABELS[peer]} FAILED: ${result.errors[0]!.split("\n")[0]!.slice(0, 200)}`, value: Number.NaN, unit: "" }];
}

function backToBackFigures(results: Results["back-to-back"]): Figure[] {
  const floor = { label: "raw", value: round(median(cpuSamples(results.raw)), 1) };
  const figures: Figure[] = [{ label: `back to back: ${LABELS.raw} CPU per ${SCENARIOS["back-to-back"].chunks!.toLocaleString("en")} chunks (median)`, value: floor.value, unit: "ms" }];
  for (const peer of PEER_NAMES.slice(1)) {
    figures.push(...errorFigure("back-to-back", peer, results[peer]));
    if (results[peer].outcomes.length === 0) continue;
    const value = round(median(cpuSamples(results[peer])), 1);
    const figure = compared({ label: `back to back: ${LABELS[peer]} CPU (median)`, value, unit: "ms" }, floor);
    figures.push(peer === "tidemark" ? { ...figure, target: "≤ 2.0× raw", isMet: value <= 2 * floor.value } : figure);
  }
  return [...errorFigure("back-to-back", "raw", results.raw), ...figures];
}

function pacedFigures(results: Results["paced"]): Figure[] {
  const cpuFloor = { label: "raw", value: round(median(cpuSamples(results.raw)) / 1000, 2) };
  const rssOf = (peer: PeerName) => round(meanOf(results[peer].outcomes.map((outcome) => outcome.report.maxRssMb)), 0);
  const rssFloor = { label: "raw", value: rssOf("raw") };
  const figures: Figure[] = [
    ...errorFigure("paced", "raw", results.raw),
    { label: `paced: ${LABELS.raw} CPU for ${PACED.streams} × ${SCENARIOS.paced.chunks} chunks (median of ${results.raw.outcomes.length})`, value: cpuFloor.value, unit: "s" },
    { label: `paced: ${LABELS.raw} peak RSS`, value: rssFloor.value, unit: "MB" },
  ];
  for (const peer of RESULT_PEERS.slice(1)) {
    figures.push(...errorFigure("paced", peer, results[peer]));
    if (results[peer].outcomes.length === 0) continue;
    const cpu = round(median(cpuSamples(results[peer])) / 1000, 2);
    const samples = results[peer].outcomes.length;
    const cpuFigure = compared({ label: `paced: ${LABELS[peer]} CPU${samples > 1 ? ` (median of ${samples})` : ""}`, value: cpu, unit: "s" }, cpuFloor);
    figures.push(
      peer === "tidemark" ? { ...cpuFigure, target: "≤ 2.0× raw", isMet: cpu <= 2 * cpuFloor.value } : cpuFigure,
      compared({ label: `paced: ${LABELS[peer]} peak RSS`, value: rssOf(peer), unit: "MB" }, rssFloor),
    );
  }
  return figures;
}

/**
 * The paced shape's CPU a chunk and a stream, fitted from its two lengths (500 and 2 chunks a
 * stream, medians of each): a stream's own cost (its creation, its persistence, its title) drops
 * out of the first, which is what "CPU per chunk" means.
 */
function pacedPerChunkFigures(long: Results["paced"], short: Results["paced-short"]): Figure[] {
  const [shortChunks, longChunks] = [SCENARIOS["paced-short"].chunks!, SCENARIOS.paced.chunks!];
  const fit = (peer: "raw" | "tidemark" | "relay") => {
    const [longCpu, shortCpu] = [median(cpuSamples(long[peer])), median(cpuSamples(short[peer]))];
    const perChunkMs = (longCpu - shortCpu) / (PACED.streams * (longChunks - shortChunks));
    return { perChunkUs: round(perChunkMs * 1000, 1), perStreamMs: round(shortCpu / PACED.streams - shortChunks * perChunkMs, 2) };
  };
  const failed = [...errorFigure("paced-short", "raw", short.raw), ...errorFigure("paced-short", "tidemark", short.tidemark)];
  const isMissing = (["raw", "tidemark"] as const).some((peer) => long[peer].outcomes.length === 0 || short[peer].outcomes.length === 0);
  if (isMissing) return failed;
  const [floor, tidemark] = [fit("raw"), fit("tidemark")];
  const fitted = `fitted from ${shortChunks} and ${longChunks} chunks a stream`;
  const perChunk = compared({ label: `paced: ${LABELS.tidemark} CPU a chunk (${fitted})`, value: tidemark.perChunkUs, unit: "µs" }, { label: "raw", value: floor.perChunkUs });
  return [
    ...failed,
    { label: `paced: ${LABELS.raw} CPU a chunk (${fitted})`, value: floor.perChunkUs, unit: "µs" },
    { ...perChunk, target: "≤ 2.0× raw", isMet: tidemark.perChunkUs <= 2 * floor.perChunkUs },
    { label: `paced: ${LABELS.raw} CPU a stream besides its chunks (median of ${short.raw.outcomes.length})`, value: floor.perStreamMs, unit: "ms" },
    compared(
      { label: `paced: ${LABELS.tidemark} CPU a stream besides its chunks (median of ${short.tidemark.outcomes.length})`, value: tidemark.perStreamMs, unit: "ms" },
      { label: "raw", value: floor.perStreamMs },
    ),
    ...relayPerChunkFigures(long, short, floor.perChunkUs, tidemark.perChunkUs, fitted, fit),
  ];
}

/**
 * The relay's CPU a chunk (a reference, no target): what any server in Tidemark's place costs a
 * chunk, and how far Tidemark's own work takes it beyond that.
 */
function relayPerChunkFigures(
  long: Results["paced"],
  short: Results["paced-short"],
  floorUs: number,
  tidemarkUs: number,
  fitted: string,
  fit: (peer: "relay") => { perChunkUs: number; perStreamMs: number },
): Figure[] {
  const failed = [...errorFigure("paced", "relay", long.relay), ...errorFigure("paced-short", "relay", short.relay)];
  if (long.relay.outcomes.length === 0 || short.relay.outcomes.length === 0) return failed;
  const relay = fit("relay");
  return [
    ...failed,
    compared({ label: `paced: ${LABELS.relay} CPU a chunk (${fitted})`, value: relay.perChunkUs, unit: "µs" }, { label: "raw", value: floorUs }),
    compared({ label: `paced: ${LABELS.tidemark} CPU a chunk, against the relay's`, value: tidemarkUs, unit: "µs" }, { label: "relay", value: relay.perChunkUs }),
    { label: `paced: ${LABELS.relay} CPU a stream besides its chunks (median of ${short.relay.outcomes.length})`, value: relay.perStreamMs, unit: "ms" },
  ];
}

function stopFigures(results: Results["stop"]): Figure[] {
  const p = (peer: PeerName, q: number) => round(percentile(closeTimes(results[peer]), q), 2);
  const rawP50 = { label: "raw abort() p50", value: p("raw", 50) };
  const rawP99 = { label: "raw abort() p99", value: p("raw", 99) };
  const figures: Figure[] = [
    ...errorFigure("stop", "raw", results.raw),
    { label: `Stop → upstream socket closed: ${LABELS.raw}, abort() p50`, value: rawP50.value, unit: "ms" },
    { label: `Stop → upstream socket closed: ${LABELS.raw}, abort() p99`, value: rawP99.value, unit: "ms" },
  ];
  for (const peer of PEER_NAMES.slice(1)) {
    figures.push(...errorFigure("stop", peer, results[peer]));
    if (results[peer].outcomes.length === 0) continue;
    const how = peer === "tidemark" ? "POST /cancel" : "abort()";
    const p50 = compared({ label: `Stop → upstream socket closed: ${LABELS[peer]}, ${how} p50`, value: p(peer, 50), unit: "ms" }, rawP50);
    const p99 = compared({ label: `Stop → upstream socket closed: ${LABELS[peer]}, ${how} p99`, value: p(peer, 99), unit: "ms" }, rawP99);
    if (peer !== "tidemark") {
      figures.push(p50, p99);
      continue;
    }
    const bare = round(median(results.tidemark.outcomes.flatMap((outcome) => outcome.report.bareRoundTripMs ?? [])), 2);
    const allowed = round(bare + rawP50.value + 1, 2);
    figures.push(
      { label: "Tidemark bare POST round trip (cancel of a finished run) p50", value: bare, unit: "ms" },
      { ...p50, target: `≤ ${allowed} ms (bare POST + raw abort + 1 ms)`, isMet: p50.value <= allowed },
      { ...p99, target: "≤ 5 ms", isMet: p99.value <= 5 },
    );
  }
  return figures;
}

/** The peers whose Stop is also measured unpinned, for reference (no target). */
const UNPINNED_REFERENCE: readonly PeerName[] = ["raw", "tidemark"];
type UnpinnedStops = Partial<Record<PeerName, PeerResult>>;

/** The Stop of the floor and of Tidemark with every process free to run on any CPU, as before the pinning. */
function unpinnedStopFigures(results: UnpinnedStops): Figure[] {
  return UNPINNED_REFERENCE.flatMap((peer) => {
    const result = results[peer];
    if (!result || result.outcomes.length === 0) return [];
    const how = peer === "tidemark" ? "POST /cancel" : "abort()";
    return [50, 99].map((q) => ({
      label: `Stop → upstream socket closed, unpinned (reference): ${LABELS[peer]}, ${how} p${q}`,
      value: round(percentile(closeTimes(result), q), 2),
      unit: "ms",
    }));
  });
}

/** Runs the Stop shape for the reference peers once more, no process pinned, on a provider of its own. */
async function runUnpinnedStops(log: (line: string) => void): Promise<UnpinnedStops> {
  const results: UnpinnedStops = {};
  const provider = await startRemoteProvider(SCENARIOS.stop);
  try {
    for (const peer of UNPINNED_REFERENCE) {
      const result: PeerResult = { outcomes: [], errors: [] };
      results[peer] = result;
      try {
        result.outcomes.push(await runPeerChild(peer, "stop", provider));
        log(`peer-compare: stop (unpinned reference): ${peer} done`);
      } catch (error) {
        result.errors.push(error instanceof Error ? error.message : String(error));
      }
    }
  } finally {
    await provider.close();
  }
  return results;
}

/** Everything the JSON keeps per shape and peer: summaries and every sample. */
function details(results: Results) {
  const perPeer = <T>(shape: ShapeName, of: (result: PeerResult) => T) => Object.fromEntries(RESULT_PEERS.map((peer) => [peer, of(results[shape][peer])]));
  const errors = (result: PeerResult) => (result.errors.length > 0 ? { errors: result.errors } : {});
  return {
    "back-to-back": perPeer("back-to-back", (result) => ({
      ...errors(result),
      cpuMs: result.outcomes.map((outcome) => outcome.report.cpuMs.map((value) => round(value, 1))),
      elapsedMs: result.outcomes.map((outcome) => outcome.report.elapsedMs.map((value) => round(value, 1))),
      maxRssMb: result.outcomes.map((outcome) => round(outcome.report.maxRssMb, 1)),
    })),
    stop: perPeer("stop", (result) => ({
      ...errors(result),
      stopToCloseMs: summarize(closeTimes(result)),
      p95: round(percentile(closeTimes(result), 95), 3),
      notClosedWithin2s: closeTimes(result).filter((value) => !Number.isFinite(value)).length,
      chunksAfterStop: summarize(stopSamples(result).map((sample) => sample.chunksAfterStop)),
      stopToClientStreamEndedMs: summarize(result.outcomes.flatMap((outcome) => outcome.report.stopToEndedMs ?? [])),
      bareRoundTripMs: result.outcomes[0]?.report.bareRoundTripMs ? summarize(result.outcomes.flatMap((outcome) => outcome.report.bareRoundTripMs!)) : undefined,
      rawStopToCloseMs: closeTimes(result).map((value) => round(value, 3)),
    })),
    "paced-short": perPeer("paced-short", (result) => ({
      ...errors(result),
      cpuMs: result.outcomes.map((outcome) => round(outcome.report.cpuMs[0]!, 0)),
      elapsedMs: result.outcomes.map((outcome) => round(outcome.report.elapsedMs[0]!, 0)),
    })),
    paced: perPeer("paced", (result) => ({
      ...errors(result),
      cpuMs: result.outcomes.map((outcome) => round(outcome.report.cpuMs[0]!, 0)),
      elapsedMs: result.outcomes.map((outcome) => round(outcome.report.elapsedMs[0]!, 0)),
      maxRssMb: result.outcomes.map((outcome) => round(outcome.report.maxRssMb, 1)),
    })),
  };
}

export const peerCompare: Benchmark = {
  name: "peer-compare",
  summary:
    "issue 18's peers on one mock provider (its own process), each peer in a fresh process: 20,000 chunks back to back (CPU), Stop → upstream socket closed, " +
    "200 streams × 500 chunks at 10 ms (CPU, peak RSS) and × 2 chunks (CPU a chunk and a stream, fitted); raw fetch + eventsource-parser (the floor), openai, AI SDK streamText, LangGraph.js, Tidemark server + SSE client; " +
    "on the paced shapes, a bare relay (server + SSE client in one process, no store) for reference",
  async run({ log }): Promise<BenchmarkResult> {
    const results = emptyResults();
    const clockChecks: Record<string, { offsetMs: number; rttMs: number }> = {};
    // The machine's busy share while each child ran: above what the child and the provider take, other sessions' load.
    const machineBusy: Record<string, (number | undefined)[]> = {};
    const isStopPinned = nodeOnCpu(STOP_CPUS.provider, []).pinned;
    let unpinnedStops: UnpinnedStops = {};
    for (const shape of SHAPE_NAMES) {
      // The Stop shape pins the provider and the peer to a core each: see cpu-pinning.ts.
      const cpus = shape === "stop" ? STOP_CPUS : undefined;
      const provider = await startRemoteProvider(SCENARIOS[shape], { cpu: cpus?.provider });
      try {
        if (shape === "stop") {
          const clock = await provider.clockOffset(CLOCK_PINGS);
          clockChecks[shape] = { offsetMs: round(clock.offsetMs, 3), rttMs: round(clock.rttMs, 3) };
        }
        const runChild = async (peer: PeerName): Promise<void> => {
          const startedAt = performance.now();
          const before = takeCpuSnapshot([]);
          try {
            results[shape][peer].outcomes.push(await runPeerChild(peer, shape, provider, cpus?.measured));
            log(`peer-compare: ${shape}: ${peer} done in ${round((performance.now() - startedAt) / 1000, 1)} s`);
            (machineBusy[`${shape} ${peer}`] ??= []).push(cpuSince(before, []).machineCpuBusy);
          } catch (error) {
            const message = error instanceof Error ? error.message : String(error);
            results[shape][peer].errors.push(message);
            log(`peer-compare: ${shape}: ${peer} FAILED: ${message.slice(0, 500)}`);
          }
        };
        if (shape === "paced-short") {
          // Only the floor, Tidemark and the relay: their per-chunk figures are fitted from the two paced lengths.
          for (let pass = 0; pass < PACED.shortRounds; pass++) for (const peer of ["tidemark", "raw", "relay"] as const) await runChild(peer);
          continue;
        }
        for (const peer of ORDER) await runChild(peer);
        if (shape === "paced") {
          for (let pass = 0; pass < PACED.alternatedRounds; pass++) for (const peer of ["tidemark", "raw", "relay"] as const) await runChild(peer);
        }
      } finally {
        await provider.close();
      }
      if (shape === "stop" && isStopPinned) unpinnedStops = await runUnpinnedStops(log);
    }
    return {
      figures: [
        ...backToBackFigures(results["back-to-back"]),
        ...stopFigures(results.stop),
        ...unpinnedStopFigures(unpinnedStops),
        ...pacedFigures(results.paced),
        ...pacedPerChunkFigures(results.paced, results["paced-short"]),
      ],
      details: {
        scenarios: SCENARIOS,
        runs: { backToBack: BACK_TO_BACK, stop: STOP, paced: PACED, order: ORDER },
        method:
          "the test provider runs in a child process (remote-provider.ts), one per shape; every peer runs each shape in a fresh `node peer-compare-child.js` and reports " +
          "its own process.cpuUsage() (all threads) over the measured stretch and its peak RSS (resourceUsage().maxRSS); Tidemark's child holds the embedded server " +
          "(startTidemark, SQLite, the lean reader as `--model openai-compatible:m` configures it) and the SSE client, so its CPU is server + client. " +
          "Stop: the child stamps absolute time when it presses Stop (abort(), or POST /v1/runs/{id}/cancel for Tidemark) after 20 deltas arrived, waits for its stream to end, " +
          "then the parent asks the provider child when that request's response closed; one Stop at a time. The raw floor runs first and last; its samples are pooled. " +
          "Paced: after every peer's child, Tidemark, the floor and the relay run PACED.alternatedRounds more times each, alternately; CPU figures are medians of the children. " +
          "Paced, short: Tidemark, the floor and the relay only, PACED.shortRounds times each, alternately, 2 chunks a stream; the CPU a chunk is (median at 500 − median at 2) ÷ (200 × 498), " +
          "and a stream's own CPU what is left of the short shape's median. The relay (peer-relay.ts) is a reference, not a peer: a bare node:http server relaying each chunk as " +
          "Tidemark's delta frame, read by Tidemark's client, in one process: what any server in Tidemark's place costs.",
        clockCheck: { note: "provider clock − bench clock by IPC ping-pong; not applied, the error bound is ± rtt/2", ...clockChecks },
        stopShapePinned: isStopPinned
          ? "yes: the provider on CPU 1, each peer's child on CPU 0 (taskset), so that the provider's wake-up never waits behind the peer's own work; raw and Tidemark again unpinned for reference (stopUnpinned)"
          : "no (taskset or a second CPU missing)",
        stopUnpinned: Object.fromEntries(
          Object.entries(unpinnedStops).map(([peer, result]) => [peer, { stopToCloseMs: summarize(closeTimes(result)), ...(result.errors.length > 0 ? { errors: result.errors } : {}) }]),
        ),
        peers: LABELS,
        machineCpuBusyPerChild: machineBusy,
        ...details(results),
      },
    };
  },
};
