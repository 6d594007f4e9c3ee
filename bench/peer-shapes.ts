import type { TestProviderScenario } from "../src/testing/index.js";
import { absoluteNow } from "./absolute-clock.js";
import { withTimeout } from "./bench-support.js";
import type { Peer, PeerStream } from "./peer-stream.js";

/**
 * The three shapes of peer-compare (issue 18), as a peer's child process runs them: each reports
 * its own CPU (process.cpuUsage: every thread of the process) and peak RSS.
 */

export type ShapeName = "back-to-back" | "stop" | "paced" | "paced-short";

export const SHAPE_NAMES: readonly ShapeName[] = ["back-to-back", "stop", "paced", "paced-short"];

/** What the provider streams for each shape. */
export const SCENARIOS: Record<ShapeName, TestProviderScenario> = {
  /** 20,000 chunks as fast as the socket takes them: the per-chunk cost with nothing hidden. */
  "back-to-back": { chunks: 20_000, intervalMs: 0 },
  /** A run would take 5 s unless stopped. */
  stop: { chunks: 1_000, intervalMs: 5 },
  /** 200 of these at once: a server's day, at a model's pace. */
  paced: { chunks: 500, intervalMs: 10 },
  /** The paced shape with 2 chunks a stream: beside it, what a chunk costs apart from what a stream costs. */
  "paced-short": { chunks: 2, intervalMs: 10 },
};

export const BACK_TO_BACK = { warmup: 1, measured: 3 };
export const STOP = { warmup: 5, measured: 100, deltasBeforeStop: 20 };
/**
 * The paced shape: 200 streams at once. Besides every peer's one child, the floor and Tidemark run
 * `alternatedRounds` more times each, one after the other, and its ratio is of their medians: one
 * child each read anywhere from 1.9× to 2.4× on one machine in one evening. The floor and Tidemark
 * also run the short paced shape `shortRounds` times each, alternately: the two lengths give the
 * CPU a chunk costs, apart from what a stream costs (its creation, its persistence, its title).
 * The relay (peer-relay.ts, a reference) runs beside them in both.
 */
export const PACED = { streams: 200, alternatedRounds: 2, shortRounds: 3 };

const PROMPT = "Please write a long answer.";

/** Characters of text a whole answer of `chunks` chunks holds (chunk i is `w<i> `). */
export function expectedTextLength(chunks: number): number {
  let length = 0;
  for (let index = 0; index < chunks; index++) length += `w${index} `.length;
  return length;
}

/** What a child reports when its shape is done. */
export interface ShapeReport {
  /** CPU of the whole process (user + system) per measured stretch, ms. */
  cpuMs: number[];
  /** Wall time per measured stretch, ms. */
  elapsedMs: number[];
  /** Peak RSS of the process over its life, MB. */
  maxRssMb: number;
  /** Stop shape, Tidemark only: the bare POST round trip after each Stop, ms. */
  bareRoundTripMs?: number[];
  /** Stop shape: Stop → the client saw its stream end, ms. */
  stopToEndedMs?: number[];
}

/** One Stop, as the child tells the parent (which asks the provider when its socket closed). */
export interface StopNotice {
  type: "stopped";
  index: number;
  marker: string;
  /** Absolute time ({@link absoluteNow}) the Stop was pressed. */
  stopAt: number;
}

async function readWhole(peer: Peer, prompt: string, chunks: number, timeoutMs: number): Promise<void> {
  const stream = peer.start(prompt);
  await withTimeout(stream.ended, timeoutMs, `${peer.name} to read the stream`);
  if (stream.textLength !== expectedTextLength(chunks)) throw new Error(`${peer.name}: expected ${expectedTextLength(chunks)} characters, got ${stream.textLength}`);
}

function measured<T>(task: () => Promise<T>): Promise<{ cpuMs: number; elapsedMs: number; value: T }> {
  const startedAt = performance.now();
  const cpu = process.cpuUsage();
  return task().then((value) => {
    const used = process.cpuUsage(cpu);
    return { cpuMs: (used.user + used.system) / 1000, elapsedMs: performance.now() - startedAt, value };
  });
}

const maxRssMb = (): number => (process.resourceUsage().maxRSS * 1024) / 1e6;

/** 20,000 chunks back to back: unmeasured warm-up streams, then measured ones one after another. */
export async function runBackToBack(peer: Peer): Promise<ShapeReport> {
  const chunks = SCENARIOS["back-to-back"].chunks!;
  const report: ShapeReport = { cpuMs: [], elapsedMs: [], maxRssMb: 0 };
  for (let index = 0; index < BACK_TO_BACK.warmup + BACK_TO_BACK.measured; index++) {
    const sample = await measured(() => readWhole(peer, PROMPT, chunks, 60_000));
    if (index < BACK_TO_BACK.warmup) continue;
    report.cpuMs.push(sample.cpuMs);
    report.elapsedMs.push(sample.elapsedMs);
  }
  return { ...report, maxRssMb: maxRssMb() };
}

/** 200 streams at once at 10 ms a chunk (500, or 2 for the short shape), measured from the first start to the last end. */
export async function runPaced(peer: Peer, shape: "paced" | "paced-short" = "paced"): Promise<ShapeReport> {
  const chunks = SCENARIOS[shape].chunks!;
  const sample = await measured(() => Promise.all(Array.from({ length: PACED.streams }, () => readWhole(peer, PROMPT, chunks, 120_000))));
  return { cpuMs: [sample.cpuMs], elapsedMs: [sample.elapsedMs], maxRssMb: maxRssMb() };
}

/**
 * Stops one at a time: a generation marked in its prompt, Stop after `deltasBeforeStop` deltas
 * arrived, the client's stream ends; then `notify` tells the parent, which answers once the
 * provider reported the socket closed, before the next generation starts.
 */
export async function runStops(peer: Peer, notify: (notice: StopNotice) => Promise<void>): Promise<ShapeReport> {
  const report: ShapeReport = { cpuMs: [], elapsedMs: [], maxRssMb: 0, stopToEndedMs: [], ...(peer.bareRoundTripMs ? { bareRoundTripMs: [] } : {}) };
  for (let index = 0; index < STOP.warmup + STOP.measured; index++) {
    // The pid keeps markers unique across children: the raw floor runs twice on one provider.
    const marker = `[peer-compare ${peer.name} ${process.pid} ${index}]`;
    const stream: PeerStream = peer.start(`${PROMPT} ${marker}`);
    await withTimeout(stream.untilDeltas(STOP.deltasBeforeStop), 10_000, `${peer.name} to stream ${STOP.deltasBeforeStop} deltas`);
    const stopAt = absoluteNow();
    await withTimeout(stream.stop(), 5_000, `${peer.name}'s Stop`);
    await withTimeout(stream.ended, 5_000, `${peer.name}'s stream to end after the Stop`);
    const endedAt = absoluteNow();
    const roundTrip = peer.bareRoundTripMs ? await peer.bareRoundTripMs() : undefined;
    await notify({ type: "stopped", index, marker, stopAt });
    if (index < STOP.warmup) continue;
    report.stopToEndedMs!.push(endedAt - stopAt);
    if (roundTrip !== undefined) report.bareRoundTripMs!.push(roundTrip);
  }
  return { ...report, maxRssMb: maxRssMb() };
}
