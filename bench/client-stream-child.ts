/**
 * One client of the client-stream benchmark, in a process of its own (`node --expose-gc`), so
 * that its CPU and memory are its own: `node client-stream-child.js <variant> <server url> <deltas>`.
 * It reads one unmeasured stream (the JIT warms up), collects garbage, then reads one measured
 * stream and prints what it cost as one JSON line on stdout.
 *
 * Variants: `baseline` (fetch + readSseEvents + JSON.parse, nothing else), `event-stream`
 * (`openRunEventStream`), `chat-session` (`createChatSession().send()`, with a subscriber).
 * Every variant starts its own thread and run over HTTP inside the measured window.
 */
import { createChatSession, createTidemarkClient, openRunEventStream, type TidemarkClient } from "../src/client/index.js";
import { readSseEvents } from "../src/stream/index.js";
import { collectGarbage } from "./collect-garbage.js";

export type ClientVariant = "baseline" | "event-stream" | "chat-session";

/** What one measured stream cost this process. */
export interface ClientStreamSample {
  variant: ClientVariant;
  deltas: number;
  /** User + system CPU of this process over the measured stream, µs. */
  cpuMicros: number;
  elapsedMs: number;
  /** After a full GC, before the stream. */
  heapBefore: number;
  rssBefore: number;
  /** At the end of the stream, before any forced GC: garbage not yet collected plus what is kept. */
  heapAtEnd: number;
  rssAtEnd: number;
  /** After a full GC at the end: what the client still holds. */
  heapRetained: number;
  /** The process's peak RSS (bytes), warm-up stream included. */
  maxRss: number;
  /** Snapshots delivered to the subscriber (chat-session only). */
  snapshots?: number;
  /** Times the draft started again mid-stream (chat-session only; see docs/benchmarks.md). */
  draftRestarts?: number;
}

const PROMPT = "Stream as fast as you can.";

async function postJson(url: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (response.status !== 201) throw new Error(`POST ${url} answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

/** (a) The baseline: what reading the same stream costs when the client does nothing else. */
async function readBaseline(url: string): Promise<{ deltas: number }> {
  const thread = await postJson(`${url}/v1/threads`, {});
  const run = await postJson(`${url}/v1/threads/${String(thread.thread_id)}/runs`, { input: { role: "user", content: PROMPT } });
  const response = await fetch(`${url}/v1/runs/${String(run.run_id)}/events`, { headers: { accept: "text/event-stream" } });
  if (response.status !== 200 || !response.body) throw new Error(`events answered ${response.status}`);
  let deltas = 0;
  let lastType = "";
  for await (const message of readSseEvents(response.body)) {
    const event = JSON.parse(message.data) as { type: string };
    lastType = event.type;
    if (event.type === "message.delta") deltas++;
  }
  if (lastType !== "run.completed") throw new Error(`stream ended with ${lastType}`);
  return { deltas };
}

/** (b) `openRunEventStream`: seq checks, heartbeat watch, connection states. */
async function readEventStream(client: TidemarkClient): Promise<{ deltas: number }> {
  const thread = await client.createThread();
  const run = await client.startRun(thread.thread_id, { input: { role: "user", content: PROMPT } });
  let deltas = 0;
  let lastType = "";
  const stream = openRunEventStream(client, run.run_id, (notice) => {
    if (notice.kind !== "event") return;
    lastType = notice.event.type;
    if (notice.event.type === "message.delta") deltas++;
  });
  await stream.done;
  if (lastType !== "run.completed") throw new Error(`stream ended with ${lastType}`);
  return { deltas };
}

/** (c) `createChatSession`: the draft grows with each delta and each change is a new snapshot. */
async function readChatSession(client: TidemarkClient, counting: { inFlight: number }): Promise<{ deltas: number; snapshots: number; draftRestarts: number }> {
  const session = createChatSession({ client });
  let snapshots = 0;
  let deltas = 0;
  let lastSeq = -1;
  let lastDraftLength = 0;
  let draftRestarts = 0;
  let finished: (() => void) | undefined;
  const isFinished = new Promise<void>((resolve) => (finished = resolve));
  const unsubscribe = session.subscribe((snapshot) => {
    snapshots++;
    if (snapshot.draft && snapshot.draft.lastSeq !== lastSeq) {
      // Each delta grows the draft and moves its lastSeq: one per delta.
      deltas++;
      lastSeq = snapshot.draft.lastSeq;
      // A draft that shrank started again: a history read that already held the message cleared it.
      if (snapshot.draft.text.length < lastDraftLength) draftRestarts++;
      lastDraftLength = snapshot.draft.text.length;
    }
    if (snapshot.run.isTerminal) finished?.();
  });
  await session.send(PROMPT);
  await isFinished;
  // The history read after run.completed is part of what the session does: wait until it is in
  // (the history then ends with the answer, each message once).
  const hasAnswer = (): boolean => {
    const history = session.getSnapshot().history;
    return history.at(-1)?.role === "assistant" && new Set(history.map((message) => message.message_id)).size === history.length;
  };
  const deadline = performance.now() + 5_000;
  while ((counting.inFlight > 0 || !hasAnswer()) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 1));
  const snapshot = session.getSnapshot();
  unsubscribe();
  session.close();
  if (snapshot.run.status !== "completed") throw new Error(`run ended ${snapshot.run.status}`);
  if (!hasAnswer()) throw new Error("the history does not end with the answer, once, after 5 s");
  return { deltas, snapshots, draftRestarts };
}


async function main(): Promise<void> {
  const [variant, url, expected] = process.argv.slice(2) as [ClientVariant, string, string];
  const counting = { inFlight: 0 };
  const countingFetch: typeof fetch = async (input, init) => {
    counting.inFlight++;
    try {
      return await fetch(input, init);
    } finally {
      counting.inFlight--;
    }
  };
  const client = createTidemarkClient({ baseUrl: url, fetch: countingFetch });
  const read = async (): Promise<{ deltas: number; snapshots?: number; draftRestarts?: number }> => {
    if (variant === "baseline") return readBaseline(url);
    if (variant === "event-stream") return readEventStream(client);
    if (variant === "chat-session") return readChatSession(client, counting);
    throw new Error(`unknown variant ${String(variant)}`);
  };
  await read();
  collectGarbage();
  const heapBefore = process.memoryUsage().heapUsed;
  const rssBefore = process.memoryUsage.rss();
  const startedAt = performance.now();
  const cpu = process.cpuUsage();
  const result = await read();
  const used = process.cpuUsage(cpu);
  const elapsedMs = performance.now() - startedAt;
  const heapAtEnd = process.memoryUsage().heapUsed;
  const rssAtEnd = process.memoryUsage.rss();
  collectGarbage();
  if (result.deltas !== Number(expected)) throw new Error(`expected ${expected} deltas, got ${result.deltas}`);
  const sample: ClientStreamSample = {
    variant,
    deltas: result.deltas,
    cpuMicros: used.user + used.system,
    elapsedMs,
    heapBefore,
    rssBefore,
    heapAtEnd,
    rssAtEnd,
    heapRetained: process.memoryUsage().heapUsed,
    maxRss: process.resourceUsage().maxRSS * 1024,
    ...(result.snapshots === undefined ? {} : { snapshots: result.snapshots, draftRestarts: result.draftRestarts }),
  };
  process.stdout.write(`${JSON.stringify(sample)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
