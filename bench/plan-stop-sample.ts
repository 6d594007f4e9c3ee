import { absoluteNow } from "./absolute-clock.js";
import { requestJson } from "./bench-support.js";
import type { PlanProvider, PlanSnapshot } from "./plan-provider.js";

/*
 * One Stop of a plan with 8 provider requests in flight, and its bare peer (one AbortController
 * over 8 fetches), each read from the provider child's record. Used by plan-stop.ts.
 */

/** Subtasks of the research run, and how many run at once. */
export const SUBTASK_COUNT = 50;
export const IN_FLIGHT = 8;
/** How long the 8 sockets (and their cancel calls) may take after a Stop before the sample says "not closed". */
const SETTLE_TIMEOUT_MS = 3_000;
const START_TIMEOUT_MS = 20_000;

/** The marker a run's prompts carry (the research agent puts the request in every subtask's prompt). */
export const MARKER_PATTERN = /\[plan-stop \d+\]/;

const SUBTASKS = Array.from({ length: SUBTASK_COUNT }, (_, index) => `Subtask number ${index + 1}`);

/** Where a Tidemark under test is, and how to wait for a run's end there. */
export interface Deployment {
  readonly name: string;
  readonly url: string;
  /** The run's status once terminal (or the last one seen when it is not within the bound). */
  terminalStatus(runId: string): Promise<string>;
  /** Where the run executes in this process: when each generation carrying `marker` heard the abort (absoluteNow()). */
  abortTimes?(marker: string): readonly number[];
}

/** One stopped plan (or bare abort), every time relative to the Stop, on this process's clock. */
export interface StopSample {
  /** The run stopped (Tidemark only). */
  runId?: string;
  /** Stop sent, absoluteNow(). */
  stopAt: number;
  /** Stop sent → the last of the in-flight upstream sockets closed (provider's clock); Infinity when one did not close. */
  toLastCloseMs: number;
  /** Stop sent → the first of them closed. */
  toFirstCloseMs: number;
  /** Streaming requests open at the Stop (must be 8). */
  inFlight: number;
  /** Chunks the provider wrote, over all of this run's streams, after the Stop was sent. */
  chunksAfter: number;
  /** Requests (of any kind) that arrived at the provider after the Stop was sent (must be 0). */
  requestsAfter: number;
  /** Cancel calls that named the in-flight requests' tokens. */
  cancelCalls: number;
  /** In-flight requests that did not get exactly one cancel call. */
  cancelMismatches: number;
  /** Stop sent → the last cancel call arrived (Tidemark only). */
  toLastCancelMs?: number;
  /** Stop sent → the 202 read (Tidemark only). */
  toReplyMs?: number;
  /** Stop sent → the first and the last of the 8 generations' signals aborted (embedded only: an abort probe around the model). */
  toFirstAbortMs?: number;
  toLastAbortMs?: number;
  /** Stop sent → the worker emitted `run.cancel_requested` (cluster only: run_events.at, whole ms). */
  toWorkerCancelEventMs?: number;
}

/** A snapshot's times on this process's clock. */
function onLocalClock(snapshot: PlanSnapshot, offsetMs: number): PlanSnapshot {
  const local = (time: number) => time - offsetMs;
  return {
    ...snapshot,
    requests: snapshot.requests.map((request) => ({
      ...request,
      startedAt: local(request.startedAt),
      socketClosedAt: request.socketClosedAt === null ? null : local(request.socketClosedAt),
      chunkTimes: request.chunkTimes.map(local),
    })),
    cancels: snapshot.cancels.map((cancel) => ({ ...cancel, at: local(cancel.at) })),
  };
}

/** What the provider's record says about a Stop at `stopAt` (this clock), for the requests carrying `marker`. */
function sampleOf(raw: PlanSnapshot, offsetMs: number, stopAt: number, marker: string): StopSample {
  const snapshot = onLocalClock(raw, offsetMs);
  const foreign = snapshot.requests.filter((request) => !request.messages.includes(marker));
  if (foreign.length > 0) throw new Error(`${foreign.length} provider request(s) without the marker ${marker}: the runs overlapped`);
  const inFlight = snapshot.requests.filter(
    (request) => request.isStreaming && request.startedAt < stopAt && (request.socketClosedAt === null || request.socketClosedAt > stopAt),
  );
  const closes = inFlight.map((request) => request.socketClosedAt ?? Number.POSITIVE_INFINITY);
  const tokens = new Set(inFlight.map((request) => request.token));
  const cancels = snapshot.cancels.filter((cancel) => tokens.has(cancel.token));
  return {
    stopAt,
    toLastCloseMs: Math.max(...closes) - stopAt,
    toFirstCloseMs: Math.min(...closes) - stopAt,
    inFlight: inFlight.length,
    chunksAfter: snapshot.requests.reduce((sum, request) => sum + request.chunkTimes.filter((at) => at > stopAt).length, 0),
    requestsAfter: snapshot.requests.filter((request) => request.startedAt > stopAt).length,
    cancelCalls: cancels.length,
    cancelMismatches: inFlight.filter((request) => request.cancelCalls !== 1).length,
    ...(cancels.length > 0 ? { toLastCancelMs: Math.max(...cancels.map((cancel) => cancel.at)) - stopAt } : {}),
  };
}

let markers = 0;

/**
 * A `research` run of 50 subtasks, 8 at once, on a fresh thread; once the provider has 8 streams
 * open with `chunksBeforeStop` chunks each, `POST /v1/runs/{id}/cancel`. Waits for the 8
 * sockets, their cancel calls and the run's end; then reads the provider's record of this run's
 * requests.
 */
export async function stopPlanOnce(deployment: Deployment, provider: PlanProvider, offsetMs: number, chunksBeforeStop: number): Promise<StopSample> {
  const marker = `[plan-stop ${++markers}]`;
  const afterId = await provider.requestCount();
  const base = deployment.url;
  const thread = await requestJson<{ thread_id: string }>("POST", `${base}/v1/threads`, {}, [201]);
  const run = await requestJson<{ run_id: string }>(
    "POST",
    `${base}/v1/threads/${thread.thread_id}/runs`,
    { input: { role: "user", content: `Research how a plan stops ${marker}` }, agent: "research", config: { subtasks: SUBTASKS, max_parallel: IN_FLIGHT } },
    [201],
  );
  const streaming = await provider.waitForStreaming({ afterId, count: IN_FLIGHT, chunks: chunksBeforeStop, timeoutMs: START_TIMEOUT_MS });
  if (streaming.isTimedOut) throw new Error(`${deployment.name}: ${IN_FLIGHT} streams did not open within ${START_TIMEOUT_MS} ms (run ${run.run_id})`);

  const stopAt = absoluteNow();
  const reply = await requestJson<{ status: string }>("POST", `${base}/v1/runs/${run.run_id}/cancel`, { reason: "bench" }, [202]);
  const repliedAt = absoluteNow();
  if (reply.status !== "cancel_requested") throw new Error(`${deployment.name}: cancel answered ${reply.status}`);
  await provider.waitForQuiet({ afterId, cancels: IN_FLIGHT, timeoutMs: SETTLE_TIMEOUT_MS });
  const status = await deployment.terminalStatus(run.run_id);
  if (status !== "cancelled") throw new Error(`${deployment.name}: run ${run.run_id} ended ${status}`);
  // Read after the run's end, so that a request started late (a step scheduled after the Stop) is in it.
  const sample = sampleOf(await provider.snapshot(afterId), offsetMs, stopAt, marker);
  const aborts = deployment.abortTimes?.(marker) ?? [];
  return {
    ...sample,
    runId: run.run_id,
    toReplyMs: repliedAt - stopAt,
    ...(aborts.length > 0 ? { toFirstAbortMs: Math.min(...aborts) - stopAt, toLastAbortMs: Math.max(...aborts) - stopAt } : {}),
  };
}

/** A chat-completions body as the lean reader sends it, carrying `marker`. */
function bareBody(marker: string, index: number): string {
  const content = `Request: bare abort ${marker}\n\nThis part: Subtask number ${index + 1}`;
  return JSON.stringify({ model: "bench", messages: [{ role: "user", content }], stream: true, stream_options: { include_usage: true } });
}

/** Reads a streamed response to its end or its abort. */
async function drain(response: Promise<Response>): Promise<void> {
  try {
    const reader = (await response).body!.getReader();
    for (let result = await reader.read(); !result.done; result = await reader.read()) void result;
  } catch {
    // The abort surfaces here; the provider's record is what is measured.
  }
}

/** The peer: 8 bare `fetch`es to the same provider under one AbortController, aborted at the same point. */
export async function abortBareOnce(provider: PlanProvider, offsetMs: number, chunksBeforeStop: number): Promise<StopSample> {
  const marker = `[plan-stop ${++markers}]`;
  const afterId = await provider.requestCount();
  const controller = new AbortController();
  const endpoint = `${provider.url}/chat/completions`;
  const reads = Array.from({ length: IN_FLIGHT }, (_, index) =>
    drain(fetch(endpoint, { method: "POST", headers: { "content-type": "application/json" }, body: bareBody(marker, index), signal: controller.signal })),
  );
  const streaming = await provider.waitForStreaming({ afterId, count: IN_FLIGHT, chunks: chunksBeforeStop, timeoutMs: START_TIMEOUT_MS });
  if (streaming.isTimedOut) throw new Error(`bare: ${IN_FLIGHT} streams did not open within ${START_TIMEOUT_MS} ms`);
  const stopAt = absoluteNow();
  controller.abort();
  await Promise.all(reads);
  await provider.waitForQuiet({ afterId, cancels: 0, timeoutMs: SETTLE_TIMEOUT_MS });
  return sampleOf(await provider.snapshot(afterId), offsetMs, stopAt, marker);
}
