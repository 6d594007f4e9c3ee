import { readSseEvents } from "../src/stream/index.js";
import { absoluteNow } from "./absolute-clock.js";
import { withTimeout } from "./bench-support.js";
import { openLayerStream, type Layer, type LayerStream } from "./compat-clients.js";
import type { PlanProvider, PlanSnapshot } from "./plan-provider.js";

/*
 * One Stop of a run through one layer, read from the provider child's record and the run's own
 * event stream (used by compat-stop.ts). The explicit Stops go one at a time; the AG-UI
 * disconnects go in batches, since each waits out the server's disconnect grace period.
 */

/** Chunks the provider has written to the run's request when Stop is pressed (≈ 50 ms at 5 ms a chunk). */
export const CHUNKS_BEFORE_STOP = 10;
/** The server's disconnect grace period (`disconnectGraceMs`, not settable from the CLI: its default). */
export const DISCONNECT_GRACE_MS = 5_000;
const PROMPT = "Please write a long answer so that I can press Stop.";
const START_TIMEOUT_MS = 20_000;

/** One Stop, every time on this process's clock (the provider's times have the clock offset subtracted). */
export interface StopSample {
  runId: string;
  /** Stop sent (the cancel request's fetch called, or the client's abort()) → the provider saw the run's request close; Infinity if it did not. */
  toCloseMs: number;
  /** Stop sent → the cancel's reply read (explicit Stops only). */
  toReplyMs?: number;
  replyStatus?: number;
  /** Cancel calls the provider received for the request's token (must be 1). */
  cancelCalls: number;
  /** Chunks the provider wrote after the Stop was sent. */
  chunksAfterStop: number;
  /** The run's requests that arrived at the provider after the Stop was sent (must be 0). */
  requestsAfterStop: number;
  /** `message.delta` events in the run's own stream after its `run.cancel_requested` (must be 0). */
  deltasAfterCancel: number;
  /** Text deltas the layer's client received beyond those the run had before `run.cancel_requested` (must be 0). */
  clientDeltasPastCancel: number;
  /** The run's terminal event and its reason (must be run.cancelled). */
  terminal: string;
}

/** The run's whole native stream, replayed once it has ended: its deltas before and after the accepted cancel. */
async function replayRun(url: string, runId: string): Promise<{ deltasBefore: number; deltasAfter: number; terminal: string }> {
  const response = await fetch(`${url}/v1/runs/${runId}/events`, { headers: { accept: "text/event-stream" } });
  if (response.status !== 200 || !response.body) throw new Error(`replay of ${runId} answered ${response.status}`);
  let isCancelAccepted = false;
  const result = { deltasBefore: 0, deltasAfter: 0, terminal: "none" };
  for await (const message of readSseEvents(response.body)) {
    const event = JSON.parse(message.data) as { type: string; reason?: string };
    if (event.type === "run.cancel_requested") isCancelAccepted = true;
    else if (event.type === "message.delta") result[isCancelAccepted ? "deltasAfter" : "deltasBefore"]++;
    else if (["run.cancelled", "run.completed", "run.failed"].includes(event.type)) result.terminal = `${event.type} (${event.reason ?? ""})`;
  }
  return result;
}

/** What the provider's record and the run's replay say about a Stop at `stopAt`. */
async function sampleOf(url: string, snapshot: PlanSnapshot, offsetMs: number, stopAt: number, marker: string, stream: LayerStream): Promise<StopSample> {
  const local = (time: number) => time - offsetMs;
  const requests = snapshot.requests.filter((request) => request.messages.includes(marker));
  const streaming = requests.filter((request) => request.isStreaming);
  if (streaming.length !== 1) throw new Error(`${marker}: ${streaming.length} streaming requests at the provider (expected 1)`);
  const [request] = streaming as [PlanSnapshot["requests"][number]];
  const replay = await replayRun(url, stream.runId);
  return {
    runId: stream.runId,
    toCloseMs: request.socketClosedAt === null ? Number.POSITIVE_INFINITY : local(request.socketClosedAt) - stopAt,
    cancelCalls: request.cancelCalls,
    chunksAfterStop: request.chunkTimes.filter((at) => local(at) > stopAt).length,
    requestsAfterStop: requests.filter((candidate) => local(candidate.startedAt) > stopAt).length,
    deltasAfterCancel: replay.deltasAfter,
    clientDeltasPastCancel: Math.max(0, stream.deltas - replay.deltasBefore),
    terminal: replay.terminal,
  };
}

let markers = 0;
const nextMarker = () => `[compat-stop ${++markers}]`;

/** Starts a run through `layer`, waits for its request to stream, presses the layer's explicit Stop. */
export async function stopOnce(layer: Layer, url: string, provider: PlanProvider, offsetMs: number): Promise<StopSample> {
  const marker = nextMarker();
  const afterId = await provider.requestCount();
  const stream = await openLayerStream(layer, url, `${PROMPT} ${marker}`);
  const streaming = await provider.waitForStreaming({ afterId, count: 1, chunks: CHUNKS_BEFORE_STOP, timeoutMs: START_TIMEOUT_MS });
  if (streaming.isTimedOut) throw new Error(`${layer}: the run's request did not stream within ${START_TIMEOUT_MS} ms`);
  const stopAt = absoluteNow();
  const replyStatus = await stream.stop();
  const toReplyMs = absoluteNow() - stopAt;
  if (replyStatus !== 200 && replyStatus !== 202) throw new Error(`${layer}: the Stop answered ${replyStatus}`);
  await provider.waitForQuiet({ afterId, cancels: 1, timeoutMs: 3_000 });
  await withTimeout(stream.ended, 10_000, `the ${layer} stream to end after the Stop`);
  // The replay ends with the run's terminal event, so the snapshot after it holds every request the run made.
  const sample = await sampleOf(url, await provider.snapshot(afterId), offsetMs, stopAt, marker, stream);
  return { ...sample, toReplyMs, replyStatus };
}

/**
 * AG-UI's own Stop: `count` runs started together; once each streams, their clients drop the
 * connection one every `spacingMs` (so that the grace periods do not all end in the same
 * millisecond); the server cancels each run when its grace period has passed without a subscriber.
 */
export async function disconnectBatch(url: string, provider: PlanProvider, offsetMs: number, count: number, spacingMs: number): Promise<StopSample[]> {
  const afterId = await provider.requestCount();
  const runs = await Promise.all(
    Array.from({ length: count }, async () => {
      const marker = nextMarker();
      return { marker, stream: await openLayerStream("ag-ui", url, `${PROMPT} ${marker}`) };
    }),
  );
  const streaming = await provider.waitForStreaming({ afterId, count, chunks: CHUNKS_BEFORE_STOP, timeoutMs: START_TIMEOUT_MS });
  if (streaming.isTimedOut) throw new Error(`ag-ui disconnect: ${count} requests did not stream within ${START_TIMEOUT_MS} ms`);
  const stops: number[] = [];
  for (const run of runs) {
    stops.push(absoluteNow());
    run.stream.abort();
    await new Promise((resolve) => setTimeout(resolve, spacingMs));
  }
  await provider.waitForQuiet({ afterId, cancels: count, timeoutMs: DISCONNECT_GRACE_MS + 10_000 });
  await Promise.all(runs.map((run) => withTimeout(run.stream.ended, 5_000, "an aborted AG-UI stream to end")));
  const snapshot = await provider.snapshot(afterId);
  const samples: StopSample[] = [];
  for (const [index, run] of runs.entries()) samples.push(await sampleOf(url, snapshot, offsetMs, stops[index]!, run.marker, run.stream));
  return samples;
}
