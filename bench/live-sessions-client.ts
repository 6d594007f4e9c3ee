/**
 * Clients of the live-sessions benchmark, in a process of their own (never the server's):
 * `node live-sessions-client.js <live|sse> <server url> <count>`, driven over IPC.
 *
 * - `live`: `count` threads, each with a live session whose one turn streams; every output.delta
 *   is acked at once (`playback`, played_chars = the characters received: a text client that
 *   acks what it revealed). Closing: `emergency_stop`, wait for `turn.ended`, close the socket.
 * - `sse`: `count` threads, each with a run of the same agent and one `GET /v1/runs/{id}/events`
 *   subscriber. Closing: `POST /v1/runs/{id}/cancel`, wait for the stream's end.
 */
import { mapLimited, requestJson, withTimeout } from "./bench-support.js";
import { consumeSse, type SseConsumption } from "./consume-sse.js";
import { connectBenchLive, type BenchLiveClient } from "./live-bench-client.js";

export type SessionsMode = "live" | "sse";

/** What the parent asks. */
export type SessionsRequest = { type: "open" } | { type: "count"; ticket: number } | { type: "close" };

/** What the child says. */
export type SessionsMessage =
  | { type: "streaming"; seconds: number }
  | { type: "count"; ticket: number; deltas: number; acks: number; activeSessions: number; cpuMicros: number }
  | { type: "closed"; endings: Record<string, number> }
  | { type: "failed"; error: string };

const OPEN_CONCURRENCY = 16;
const END_TIMEOUT_MS = 40_000;
/** A busy server (199 other sessions starting or streaming) may take a while to take the upgrade. */
const OPEN_TIMEOUT_MS = 30_000;
const PROMPT = "Tell me a long story.";

/** One session or stream: how many deltas it received, and how to end it. */
interface Stream {
  deltas: number;
  deltasAtLastCount: number;
  end(): Promise<string>;
}

const [mode, url, countText] = process.argv.slice(2) as [SessionsMode, string, string];
const count = Number(countText);
const streams: Stream[] = [];
let deltas = 0;
let acks = 0;
let isStreaming: (() => void) | undefined;
const allStreaming = new Promise<void>((resolve) => (isStreaming = resolve));
let streamingCount = 0;

const send = (message: SessionsMessage): void => {
  if (process.connected) process.send!(message);
};

function countDelta(stream: Stream): void {
  stream.deltas++;
  deltas++;
  if (stream.deltas === 1 && ++streamingCount === count) isStreaming?.();
}

async function openLive(): Promise<Stream> {
  const { thread_id: threadId } = await requestJson<{ thread_id: string }>("POST", `${url}/v1/threads`, {}, [201]);
  const stream: Stream = { deltas: 0, deltasAtLastCount: 0, end: async () => "not opened" };
  const client: BenchLiveClient = await connectBenchLive(url, threadId, {
    keepFrames: false,
    openTimeoutMs: OPEN_TIMEOUT_MS,
    // Deltas come only after the transcript, sent once the client is assigned.
    onFrame(frame) {
      if (frame.type !== "output.delta") return;
      countDelta(stream);
      const messageId = frame.message_id as string;
      client.send({ type: "playback", message_id: messageId, played_chars: client.textOf(messageId).length });
      acks++;
    },
  });
  client.send({ type: "user.stopped_speaking", transcript: PROMPT });
  stream.end = async () => {
    const ended = client.waitFor("turn.ended", (frame) => frame.type === "turn.ended", { timeoutMs: END_TIMEOUT_MS });
    client.send({ type: "emergency_stop" });
    const status = (await ended).frame.status as string;
    await client.close();
    return status;
  };
  return stream;
}

async function openSse(): Promise<Stream> {
  const { thread_id: threadId } = await requestJson<{ thread_id: string }>("POST", `${url}/v1/threads`, {}, [201]);
  const { run_id: runId } = await requestJson<{ run_id: string }>("POST", `${url}/v1/threads/${threadId}/runs`, { input: { role: "user", content: PROMPT } }, [201]);
  const controller = new AbortController();
  const stream: Stream = { deltas: 0, deltasAtLastCount: 0, end: async () => "" };
  const consumed: Promise<SseConsumption> = consumeSse(`${url}/v1/runs/${runId}/events`, { signal: controller.signal, onDelta: () => countDelta(stream) });
  stream.end = async () => {
    await requestJson("POST", `${url}/v1/runs/${runId}/cancel`, { reason: "bench" }, [200, 202]);
    try {
      return (await withTimeout(consumed, END_TIMEOUT_MS, "the SSE stream to end")).lastType ?? "none";
    } finally {
      controller.abort();
    }
  };
  return stream;
}

async function open(): Promise<void> {
  const startedAt = performance.now();
  const opened = await mapLimited(Array.from({ length: count }), OPEN_CONCURRENCY, () => (mode === "live" ? openLive() : openSse()));
  streams.push(...opened);
  await allStreaming;
  send({ type: "streaming", seconds: (performance.now() - startedAt) / 1000 });
}

function countNow(ticket: number): void {
  let activeSessions = 0;
  for (const stream of streams) {
    if (stream.deltas > stream.deltasAtLastCount) activeSessions++;
    stream.deltasAtLastCount = stream.deltas;
  }
  const cpu = process.cpuUsage();
  send({ type: "count", ticket, deltas, acks, activeSessions, cpuMicros: cpu.user + cpu.system });
}

async function close(): Promise<void> {
  const endings: Record<string, number> = {};
  const results = await mapLimited(streams, OPEN_CONCURRENCY, (stream) => stream.end().catch((error: unknown) => `failed: ${String(error).slice(0, 120)}`));
  for (const ending of results) endings[ending] = (endings[ending] ?? 0) + 1;
  send({ type: "closed", endings });
}

const fail = (error: unknown): void => send({ type: "failed", error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
process.on("message", (request: SessionsRequest) => {
  if (request.type === "open") open().catch(fail);
  else if (request.type === "count") countNow(request.ticket);
  else if (request.type === "close") close().catch(fail);
});
process.once("disconnect", () => process.exit(0));
setTimeout(() => process.exit(0), 600_000).unref();
