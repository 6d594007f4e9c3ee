import { absoluteNow } from "./absolute-clock.js";
import { requestJson, withTimeout } from "./bench-support.js";
import { connectBenchLive, type BenchLiveClient, type LiveFrame, type ReceivedFrame } from "./live-bench-client.js";
import { frameText, type LiveSocketObserver } from "./live-socket-observer.js";
import type { PlanProvider, PlanRequest } from "./plan-provider.js";

/*
 * One chain of live turns on a fresh thread and session, each cut after K acknowledged characters
 * by a barge-in or an emergency stop, and what each cut looked like from the server (the socket
 * observer), the provider child and the client; plus the bare peer (one fetch aborted). Used by
 * live-barge-in.ts.
 */

/** Characters the client has received beyond K before it acks K and cuts: unheard text exists. */
const UNHEARD_MARGIN = 12;
const TURN_START_TIMEOUT_MS = 20_000;
/** The session waits up to 30 s for a cut run to end (RUN_END_WAIT_MS); a bit more here. */
const TURN_END_TIMEOUT_MS = 35_000;
const CLOSE_TIMEOUT_MS = 3_000;

/** The marker each turn's transcript carries (the provider's record and the model probe find it). */
export const MARKER_PATTERN = /\[live-barge-in \d+\]/;
let markers = 0;
const nextMarker = () => `[live-barge-in ${++markers}]`;
const transcriptOf = (marker: string) => `Tell me a long story ${marker}`;

/** What a turn is cut by, and after how many acknowledged characters. */
export interface TurnPlan {
  kind: "barge_in" | "emergency_stop";
  ackedChars: number;
}

/** Where the chains run, and the clocks to read their times on. */
export interface BargeInContext {
  url: string;
  provider: PlanProvider;
  /** Provider child clock − this clock. */
  offsetMs: number;
  observer: LiveSocketObserver;
  /** When the generation carrying `marker` saw its signal abort (absoluteNow()), once. */
  abortTime(marker: string): number | undefined;
}

/** One cut turn. Times in ms from the cutting frame's arrival at the server, on this process's clock. */
export interface TurnSample {
  kind: TurnPlan["kind"];
  ackedChars: number;
  /** Characters of the answer the client had received when it acked. */
  receivedCharsAtAck: number;
  /** The turn.interrupted frame's heard_chars (must be K). */
  heardChars: number;
  reason: string;
  /** The run's status in turn.ended (must be cancelled). */
  status: string;
  /** user.started_speaking → user.stopped_speaking arrival at the server (barge-in only). */
  speechToCutFrameMs?: number;
  /** Last output.delta of the cut message sent, raw (negative: before the frame arrived). */
  lastDeltaSentRawMs: number;
  /** The same, 0 when nothing was sent after the frame: figure (a). */
  toLastDeltaSentMs: number;
  deltasSentAfterCut: number;
  toInterruptedSentMs: number;
  toPublishedSentMs?: number;
  toTurnEndedSentMs: number;
  toSignalAbortedMs?: number;
  /** The provider saw the turn's upstream socket close: figure (b). */
  toUpstreamClosedMs: number;
  chunksAfterCut: number;
  cancelCalls: number;
  /** Client: cutting frame sent → the server's ws delivered it (time in the socket and on this process's event loop). */
  clientToServerMs: number;
  /** Client: cutting frame sent → turn.interrupted received. */
  clientToInterruptedMs: number;
  /** Client: output.delta frames of the cut message received after turn.interrupted (must be 0). */
  deltasReceivedAfterInterrupted: number;
  /** message.published content against the first K characters received: figure (c). */
  driftChars: number;
  /** The thread's history against the same prefix (filled in at the chain's end). */
  historyDriftChars: number;
  /** The history's message is marked interrupted (K > 0; filled in at the chain's end). */
  isHistoryMarkedInterrupted?: boolean;
  /** The published message's `interrupted` flag (K > 0). */
  isMarkedInterrupted?: boolean;
  runId: string;
  messageId: string;
}

/** Characters by which `actual` differs from `expected`: 0 when equal, else what follows their common prefix. */
export function driftOf(actual: string, expected: string): number {
  if (actual === expected) return 0;
  let common = 0;
  while (common < actual.length && common < expected.length && actual[common] === expected[common]) common++;
  return Math.max(actual.length, expected.length) - common;
}

function lastUserContent(messages: string): string {
  const parsed = JSON.parse(messages) as { role?: string; content?: unknown }[] | null;
  const last = parsed?.findLast((message) => message.role === "user");
  return typeof last?.content === "string" ? last.content : "";
}

/** The streaming request whose last user message carries `marker`, once its socket closed (polled; bounded). */
async function closedRequest(provider: PlanProvider, afterId: number, marker: string): Promise<PlanRequest> {
  const deadline = performance.now() + CLOSE_TIMEOUT_MS;
  for (;;) {
    const snapshot = await provider.snapshot(afterId);
    const request = snapshot.requests.find((candidate) => candidate.isStreaming && lastUserContent(candidate.messages).includes(marker));
    if (request?.socketClosedAt !== null && request?.socketClosedAt !== undefined) return request;
    if (performance.now() > deadline) throw new Error(`the upstream request of ${marker} ${request ? "did not close" : "never arrived"} within ${CLOSE_TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The server's frames of one chain, parsed once each. */
function sentFrames(context: BargeInContext, threadId: string, parsed: { at: number; frame: LiveFrame }[]): { at: number; frame: LiveFrame }[] {
  const sent = context.observer.socketOf(threadId)?.sent ?? [];
  for (let index = parsed.length; index < sent.length; index++) parsed.push({ at: sent[index]!.at, frame: JSON.parse(frameText(sent[index]!)) as LiveFrame });
  return parsed;
}

/** Cuts the turn now playing after `plan.ackedChars`, waits for its end and upstream close, and measures it. */
async function cutTurn(
  context: BargeInContext,
  client: BenchLiveClient,
  turn: { threadId: string; marker: string; afterId: number; from: number; parsed: { at: number; frame: LiveFrame }[] },
  plan: TurnPlan,
  next: { marker: string } | undefined,
): Promise<TurnSample> {
  const started = await client.waitFor("turn.started", (frame) => frame.type === "turn.started", { from: turn.from, timeoutMs: TURN_START_TIMEOUT_MS });
  const runId = started.frame.run_id as string;
  const messageId = started.frame.message_id as string;
  const K = plan.ackedChars;
  const hasEnough = (frame: LiveFrame) => frame.type === "output.delta" && frame.message_id === messageId && client.textOf(messageId).length >= K + UNHEARD_MARGIN;
  await client.waitFor(`${K + UNHEARD_MARGIN} characters`, hasEnough, { from: started.index, timeoutMs: TURN_START_TIMEOUT_MS });
  const observed = context.observer.socketOf(turn.threadId);
  if (!observed) throw new Error(`no observed socket for ${turn.threadId}`);
  const receivedFrom = observed.received.length;
  const cutFrom = client.frames.length;
  const receivedCharsAtAck = client.textOf(messageId).length;
  client.send({ type: "playback", message_id: messageId, played_chars: K });
  let cutSentAt: number;
  if (plan.kind === "barge_in") {
    client.send({ type: "user.started_speaking" });
    cutSentAt = client.send({ type: "user.stopped_speaking", transcript: transcriptOf(next!.marker) });
  } else cutSentAt = client.send({ type: "emergency_stop" });

  const isOfCut = (frame: LiveFrame) => frame.message_id === messageId;
  const interrupted = await client.waitFor("turn.interrupted", (frame) => frame.type === "turn.interrupted" && isOfCut(frame), { from: cutFrom, timeoutMs: TURN_END_TIMEOUT_MS });
  const ended = await client.waitFor("turn.ended", (frame) => frame.type === "turn.ended" && frame.run_id === runId, { from: cutFrom, timeoutMs: TURN_END_TIMEOUT_MS });
  const upstream = await closedRequest(context.provider, turn.afterId, turn.marker);

  const received = observed.received.slice(receivedFrom).map((frame) => ({ at: frame.at, text: frameText(frame) }));
  const cutFrame = received.find((frame) => frame.text.includes(plan.kind === "barge_in" ? '"user.stopped_speaking"' : '"emergency_stop"'));
  if (!cutFrame) throw new Error(`the server never received the ${plan.kind} frame of ${turn.marker}`);
  const speechFrame = plan.kind === "barge_in" ? received.find((frame) => frame.text.includes('"user.started_speaking"')) : undefined;
  const cutAt = cutFrame.at;
  const sent = sentFrames(context, turn.threadId, turn.parsed);
  const deltasSent = sent.filter((entry) => entry.frame.type === "output.delta" && isOfCut(entry.frame));
  const sentAt = (matches: (frame: LiveFrame) => boolean) => sent.find((entry) => matches(entry.frame))?.at;
  const lastDeltaAt = Math.max(...deltasSent.map((entry) => entry.at));
  const published = client.frames.slice(cutFrom).find((entry) => entry.frame.type === "message.published" && isOfCut(entry.frame));
  const publishedSentAt = sentAt((frame) => frame.type === "message.published" && isOfCut(frame));
  const abortedAt = context.abortTime(turn.marker);
  const local = (time: number) => time - context.offsetMs;
  const deltasReceived = client.frames.filter((entry: ReceivedFrame) => entry.frame.type === "output.delta" && isOfCut(entry.frame));
  return {
    kind: plan.kind,
    ackedChars: K,
    receivedCharsAtAck,
    heardChars: interrupted.frame.heard_chars as number,
    reason: interrupted.frame.reason as string,
    status: ended.frame.status as string,
    ...(speechFrame ? { speechToCutFrameMs: cutAt - speechFrame.at } : {}),
    lastDeltaSentRawMs: lastDeltaAt - cutAt,
    toLastDeltaSentMs: Math.max(0, lastDeltaAt - cutAt),
    deltasSentAfterCut: deltasSent.filter((entry) => entry.at > cutAt).length,
    toInterruptedSentMs: sentAt((frame) => frame.type === "turn.interrupted" && isOfCut(frame))! - cutAt,
    ...(publishedSentAt !== undefined ? { toPublishedSentMs: publishedSentAt - cutAt } : {}),
    toTurnEndedSentMs: sentAt((frame) => frame.type === "turn.ended" && frame.run_id === runId)! - cutAt,
    ...(abortedAt !== undefined ? { toSignalAbortedMs: abortedAt - cutAt } : {}),
    toUpstreamClosedMs: local(upstream.socketClosedAt!) - cutAt,
    chunksAfterCut: upstream.chunkTimes.filter((time) => local(time) > cutAt).length,
    cancelCalls: upstream.cancelCalls,
    clientToServerMs: cutAt - cutSentAt,
    clientToInterruptedMs: interrupted.at - cutSentAt,
    deltasReceivedAfterInterrupted: deltasReceived.filter((entry) => entry.index > interrupted.index).length,
    driftChars: driftOf((published?.frame.content as string | undefined) ?? "", client.textOf(messageId).slice(0, K)),
    historyDriftChars: Number.NaN,
    ...(published ? { isMarkedInterrupted: published.frame.interrupted === true } : {}),
    runId,
    messageId,
  };
}

/** The expected heard prefix of each sample against the thread's history (messages absent: ""). */
async function checkHistory(url: string, threadId: string, samples: TurnSample[], client: BenchLiveClient): Promise<void> {
  const history = await requestJson<{ messages: { message_id: string; content: string; interrupted: boolean }[] }>("GET", `${url}/v1/threads/${threadId}/history`, undefined, [200]);
  const byId = new Map(history.messages.map((message) => [message.message_id, message]));
  for (const sample of samples) {
    const message = byId.get(sample.messageId);
    const expected = client.textOf(sample.messageId).slice(0, sample.ackedChars);
    sample.historyDriftChars = driftOf(message?.content ?? "", expected);
    if (message) sample.isHistoryMarkedInterrupted = message.interrupted;
  }
}

/**
 * A fresh thread and live session (`min_interruption_ms: 0`), then one turn per plan: each is cut
 * as planned; a barge-in's transcript is the next turn, an emergency stop is followed by a new
 * transcript. The chain's last plan must be an emergency stop (nothing is left playing).
 */
export async function runChain(context: BargeInContext, plans: readonly TurnPlan[], afterEachTurn?: () => Promise<void>): Promise<TurnSample[]> {
  if (plans.at(-1)?.kind !== "emergency_stop") throw new Error("a chain ends with an emergency stop");
  const { url, provider } = context;
  const { thread_id: threadId } = await requestJson<{ thread_id: string }>("POST", `${url}/v1/threads`, {}, [201]);
  const client = await connectBenchLive(url, threadId);
  const samples: TurnSample[] = [];
  const parsed: { at: number; frame: LiveFrame }[] = [];
  try {
    client.send({ type: "session.update", interruption: { min_interruption_ms: 0 } });
    await client.waitFor("session.updated", (frame) => frame.type === "session.updated", { from: 0, timeoutMs: 10_000 });
    let marker = nextMarker();
    let afterId = await provider.requestCount();
    let from = client.frames.length;
    client.send({ type: "user.stopped_speaking", transcript: transcriptOf(marker) });
    for (const [index, plan] of plans.entries()) {
      const isLast = index === plans.length - 1;
      const next = plan.kind === "barge_in" ? { marker: nextMarker() } : undefined;
      // The barge-in starts the next turn: its request comes after this count.
      const nextAfterId = next ? await provider.requestCount() : 0;
      const sample = await cutTurn(context, client, { threadId, marker, afterId, from, parsed }, plan, next);
      samples.push(sample);
      if (next) {
        marker = next.marker;
        afterId = nextAfterId;
        from = client.frames.findIndex((entry) => entry.frame.type === "turn.ended" && entry.frame.run_id === sample.runId) + 1;
      } else if (!isLast) {
        marker = nextMarker();
        afterId = await provider.requestCount();
        from = client.frames.length;
        client.send({ type: "user.stopped_speaking", transcript: transcriptOf(marker) });
      }
      await afterEachTurn?.();
    }
    await checkHistory(url, threadId, samples, client);
    return samples;
  } finally {
    await client.close();
  }
}

/** The bare peer's request body, shaped as the lean reader sends it, carrying `marker`. */
function bareBody(marker: string): string {
  return JSON.stringify({ model: "bench", messages: [{ role: "user", content: `Tell me a long story ${marker}` }], stream: true, stream_options: { include_usage: true } });
}

let bareMarkers = 0;

/**
 * One `fetch` to the same provider under an AbortController, read until `chunks` content chunks
 * arrived, then aborted: abort() → the provider saw the socket close, and chunks written after.
 */
export async function abortBareOnce(provider: PlanProvider, offsetMs: number, chunks: number): Promise<{ toUpstreamClosedMs: number; chunksAfterCut: number }> {
  const marker = `[live-bare ${++bareMarkers}]`;
  const afterId = await provider.requestCount();
  const controller = new AbortController();
  const response = await fetch(`${provider.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: bareBody(marker), signal: controller.signal });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let seen = 0;
  const enough = (async () => {
    // The first data line is the role chunk; content chunks follow.
    for (let result = await reader.read(); !result.done; result = await reader.read()) {
      seen += decoder.decode(result.value, { stream: true }).split("data: ").length - 1;
      if (seen > chunks) return;
    }
    throw new Error("the bare stream ended before the abort");
  })();
  let abortAt = Number.NaN;
  try {
    await withTimeout(enough, 10_000, "the bare stream's chunks");
  } finally {
    abortAt = absoluteNow();
    controller.abort();
  }
  await reader.read().catch(() => undefined);
  const request = await closedRequest(provider, afterId, marker);
  return {
    toUpstreamClosedMs: request.socketClosedAt! - offsetMs - abortAt,
    chunksAfterCut: request.chunkTimes.filter((time) => time - offsetMs > abortAt).length,
  };
}
