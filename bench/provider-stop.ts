import { subscribe, unsubscribe } from "node:diagnostics_channel";
import type { Socket } from "node:net";
import { join } from "node:path";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { streamText } from "ai";
import { createParser } from "eventsource-parser";
import { createOpenAICompatibleModel, fromAISDKModel, withRetries } from "../src/models/index.js";
import { createRuntime, silentLogger, type ChatModel, type Runtime } from "../src/runtime/index.js";
import { startTidemark } from "../src/start-tidemark.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { absoluteNow } from "./absolute-clock.js";
import { createTempDir, withTimeout } from "./bench-support.js";
import { compared, type Benchmark, type BenchmarkResult, type Figure } from "./benchmark.js";
import { startRemoteProvider, type RemoteClose, type RemoteProvider } from "./remote-provider.js";
import { percentile, round, summarize } from "./statistics.js";

const TENANT = "bench";
/** The tenant of a server without API keys. */
const TENANT_LOCAL = "local";
/** The provider streams 1,000 chunks, one every 5 ms: a run would take 5 s unless stopped. */
const SCENARIO = { chunks: 1_000, intervalMs: 5 };
/** Chunks the provider has written before Stop is pressed. */
const CHUNKS_BEFORE_STOP = 50;
const WARMUP_RUNS_PER_ROW = 4;
/** Runs measured per row (102 = 3 lanes × 34). */
const MEASURED_RUNS_PER_ROW = 102;
/**
 * Three lanes run concurrently, each rotating over the rows, so a row's runs see the same
 * background. Starting a run and stopping one are serialized (see `exclusive`), so while a Stop
 * is measured the only other work is up to two other streams receiving a chunk every 5 ms.
 * Sequentially, 306 runs of ≈ 0.3 s each would take ≈ 90 s.
 */
const LANES = 3;
/** How long the provider may take to see the socket close before the run counts as "not closed". */
const CLOSE_TIMEOUT_MS = 2_000;
/** IPC ping-pongs to estimate the child's clock offset (a check on the cross-process timestamps). */
const CLOCK_PINGS = 50;
const PROMPT = "Please write a long answer so that I can press Stop.";

type RowName = "tidemark-lean" | "tidemark-ai-sdk" | "tidemark-http" | "raw-fetch" | "ai-sdk-streamText";

/**
 * One stopped generation, as the provider (a child process) saw it. Every time is absolute
 * (`performance.timeOrigin + performance.now()`) in its own process, so differences cross processes.
 */
interface StopSample {
  /** Stop pressed (cancelRun called / controller.abort()) → the provider's response closed; Infinity if it never closed. */
  stopToCloseMs: number;
  /** Chunks the provider wrote after the cancel was accepted (Tidemark) or after abort() (peer). */
  chunksAfter: number;
  /** Chunks the provider wrote after the client destroyed its socket (before it could see the close). */
  chunksAfterDestroy: number;
  /** Chunks the provider had written when Stop was pressed (≥ 50: the lanes may queue a Stop briefly). */
  chunksAtStop: number;
  /** The provider wrote chunk 50 → Stop pressed (IPC report plus any queueing behind another lane's start or Stop). */
  chunk50ToStopMs: number;
  /** Stop pressed → the first client socket to the provider destroyed after it (the client's side of the close). */
  stopToDestroyMs: number;
  /** Client socket destroyed → the provider's response closed (loopback + the provider's own event loop). */
  destroyToCloseMs: number;
  /** Tidemark only: cancelRun() called → onCancelAccepted (the store transaction). */
  callToAcceptedMs?: number;
  /** Tidemark only: onCancelAccepted → the provider's response closed. */
  acceptedToCloseMs?: number;
  /** HTTP row only: a bare POST to the same server (a 404 through the same middleware), sent just before the Stop. */
  barePostMs?: number;
}

interface Started {
  requestId: number;
  stop(chunk50At: number): Promise<StopSample>;
}

interface Row {
  name: RowName;
  /** Starts one generation and resolves once the provider has streamed its first chunk. */
  start(marker: string): Promise<Started>;
  close(): Promise<void>;
}

/** Serializes critical sections across lanes: a promise chain, one section at a time. */
function createExclusive(): <T>(section: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(section: () => Promise<T>): Promise<T> => {
    const result = tail.then(section);
    tail = result.catch(() => undefined);
    return result;
  };
}

/** The first streaming request carrying `marker`, once the provider has written its first chunk. */
async function firstChunkOf(provider: RemoteProvider, marker: string): Promise<number> {
  const request = await provider.streamingRequestFor(marker, 10_000);
  await provider.chunkReached(request.id, 1, 5_000);
  return request.id;
}

/**
 * Records when client sockets to `port` are destroyed (the `net.client.socket` channel hands
 * over each new socket; its `destroy` is wrapped on the instance): the moment this process
 * actually closed the connection, in absolute time.
 */
function watchSocketDestroys(port: string): { firstAfter(time: number): number; close(): void } {
  const destroyedAt: number[] = [];
  const watch = (socket: Socket): void => {
    const destroy = socket.destroy.bind(socket);
    socket.destroy = (error?: Error) => {
      if (!socket.destroyed && String(socket.remotePort) === port) destroyedAt.push(absoluteNow());
      return destroy(error);
    };
  };
  // Every client socket, fetch's (undici) and node:http's (the lean reader's), is made by net.connect.
  const onSocket = (message: unknown): void => watch((message as { socket: Socket }).socket);
  subscribe("net.client.socket", onSocket);
  return {
    firstAfter: (time) => (destroyedAt.find((at) => at >= time) ?? Number.POSITIVE_INFINITY) - time,
    close: () => void unsubscribe("net.client.socket", onSocket),
  };
}

type SocketWatch = ReturnType<typeof watchSocketDestroys>;

/**
 * Waits for the child to report request `id` closed: Stop → close (Infinity when not within
 * CLOSE_TIMEOUT_MS) and its chunk times (waiting longer for those, so a late close still counts its chunks).
 */
async function closeOf(provider: RemoteProvider, id: number, stopAt: number): Promise<{ stopToCloseMs: number; close: RemoteClose }> {
  const closed = provider.closed(id);
  const isClosed = await withTimeout(closed, CLOSE_TIMEOUT_MS, "socket close").then(
    () => true,
    () => false,
  );
  const close = await withTimeout(closed, 10_000, `request ${id} to close`);
  return { stopToCloseMs: isClosed ? close.socketClosedAt - stopAt : Number.POSITIVE_INFINITY, close };
}

const after = (times: readonly number[], time: number) => times.filter((at) => at > time).length;

/** The sample fields every row shares, from the child's record of the request. */
function sampleOf(close: RemoteClose, stopToCloseMs: number, stopAt: number, chunk50At: number, sockets: SocketWatch) {
  const stopToDestroyMs = sockets.firstAfter(stopAt);
  return {
    stopToCloseMs,
    stopToDestroyMs,
    destroyToCloseMs: stopToCloseMs - stopToDestroyMs,
    chunksAfterDestroy: after(close.chunkTimes, stopAt + stopToDestroyMs),
    chunksAtStop: close.chunkTimes.length - after(close.chunkTimes, stopAt),
    chunk50ToStopMs: stopAt - chunk50At,
  };
}

/** A Tidemark runtime (SQLite in a temp dir) over `model`; Stop is `runtime.cancelRun()`. */
async function tidemarkRow(name: RowName, provider: RemoteProvider, model: ChatModel, dir: string, sockets: SocketWatch): Promise<Row> {
  const store = createSqliteStore({ path: join(dir, `${name}.db`) });
  const acceptedAt = new Map<string, number>();
  const runtime: Runtime = createRuntime({
    store,
    model,
    logger: silentLogger,
    observer: {
      onCancelAccepted: (run) => {
        acceptedAt.set(run.runId, absoluteNow());
      },
    },
  });
  await runtime.start();
  return {
    name,
    async start(marker) {
      const thread = await runtime.createThread(TENANT);
      const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: `${PROMPT} ${marker}` } });
      const requestId = await firstChunkOf(provider, marker);
      return {
        requestId,
        async stop(chunk50At) {
          const calledAt = absoluteNow();
          const result = await runtime.cancelRun(TENANT, run.runId, "bench");
          if (result.kind !== "accepted") throw new Error(`cancel answered ${result.kind}`);
          const { stopToCloseMs, close } = await closeOf(provider, requestId, calledAt);
          const accepted = acceptedAt.get(run.runId);
          acceptedAt.delete(run.runId);
          if (accepted === undefined) throw new Error("onCancelAccepted did not fire");
          const final = await runtime.waitForTerminal(TENANT, run.runId, 5_000);
          if (final?.status !== "cancelled") throw new Error(`run ended ${final?.status}`);
          return {
            ...sampleOf(close, stopToCloseMs, calledAt, chunk50At, sockets),
            chunksAfter: after(close.chunkTimes, accepted),
            callToAcceptedMs: accepted - calledAt,
            acceptedToCloseMs: stopToCloseMs - (accepted - calledAt),
          };
        },
      };
    },
    async close() {
      await runtime.close();
      await store.close();
    },
  };
}

/**
 * Tidemark as a client uses it: an embedded server in this process (SQLite, the lean reader), the
 * run created and its events read over HTTP, and Stop = `POST /v1/runs/{id}/cancel`, timed from
 * just before the request is sent. Just before each Stop, a bare POST to the same server (an
 * unknown route: the same middleware, a 404) times the HTTP round trip the Stop cannot avoid.
 */
async function httpRow(provider: RemoteProvider, model: ChatModel, dir: string, sockets: SocketWatch): Promise<Row> {
  const tidemark = await startTidemark({ dbPath: join(dir, "http.db"), host: "127.0.0.1", port: 0, model, logger: silentLogger });
  const post = (path: string, body: unknown) =>
    fetch(`${tidemark.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return {
    name: "tidemark-http",
    async start(marker) {
      const thread = (await (await post("/v1/threads", {})).json()) as { thread_id: string };
      const run = (await (await post(`/v1/threads/${thread.thread_id}/runs`, { input: { role: "user", content: `${PROMPT} ${marker}` } })).json()) as { run_id: string };
      // Read as a client does, so the server's SSE writer is on the path the Stop crosses.
      const events = await fetch(`${tidemark.url}/v1/runs/${run.run_id}/events`, { headers: { accept: "text/event-stream" } });
      const drained = events.body!.pipeTo(new WritableStream()).catch(() => undefined);
      const requestId = await firstChunkOf(provider, marker);
      return {
        requestId,
        async stop(chunk50At) {
          const bareStart = absoluteNow();
          await (await post("/v1/bare-round-trip", {})).arrayBuffer();
          const barePostMs = absoluteNow() - bareStart;
          const calledAt = absoluteNow();
          const reply = await post(`/v1/runs/${run.run_id}/cancel`, { reason: "bench" });
          const repliedAt = absoluteNow();
          if (reply.status !== 202) throw new Error(`cancel answered ${reply.status}`);
          await reply.arrayBuffer();
          const { stopToCloseMs, close } = await closeOf(provider, requestId, calledAt);
          const final = await tidemark.runtime.waitForTerminal(TENANT_LOCAL, run.run_id, 5_000);
          if (final?.status !== "cancelled") throw new Error(`run ended ${final?.status}`);
          await withTimeout(drained, 5_000, "the event stream to end");
          return {
            ...sampleOf(close, stopToCloseMs, calledAt, chunk50At, sockets),
            // The 202 says the cancel was recorded: chunks written after it arrived.
            chunksAfter: after(close.chunkTimes, repliedAt),
            callToAcceptedMs: repliedAt - calledAt,
            acceptedToCloseMs: stopToCloseMs - (repliedAt - calledAt),
            barePostMs,
          };
        },
      };
    },
    close: () => tidemark.close(),
  };
}

/**
 * A library consumer's row: `read` streams one generation with the signal given, and Stop is
 * that signal's `abort()`. An abort may end the read with an error; the provider's record is
 * what is measured.
 */
function abortedReadRow(name: RowName, provider: RemoteProvider, sockets: SocketWatch, read: (prompt: string, signal: AbortSignal) => Promise<void>): Row {
  return {
    name,
    async start(marker) {
      const controller = new AbortController();
      const consumed = read(`${PROMPT} ${marker}`, controller.signal).catch(() => undefined);
      const requestId = await firstChunkOf(provider, marker);
      return {
        requestId,
        async stop(chunk50At) {
          const abortedAt = absoluteNow();
          controller.abort();
          const { stopToCloseMs, close } = await closeOf(provider, requestId, abortedAt);
          await withTimeout(consumed, 5_000, `${name} to end`);
          return { ...sampleOf(close, stopToCloseMs, abortedAt, chunk50At, sockets), chunksAfter: after(close.chunkTimes, abortedAt) };
        },
      };
    },
    close: () => Promise.resolve(),
  };
}

/** The floor: `fetch` + eventsource-parser + `JSON.parse` of each chunk, stopped with its AbortController. */
function rawFetchRow(provider: RemoteProvider, sockets: SocketWatch): Row {
  return abortedReadRow("raw-fetch", provider, sockets, async (prompt, signal) => {
    const response = await fetch(`${provider.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", stream: true, messages: [{ role: "user", content: prompt }] }),
      signal,
    });
    const parser = createParser({ onEvent: (event) => void (event.data === "[DONE]" || JSON.parse(event.data)) });
    const decoder = new TextDecoder();
    for await (const bytes of response.body!) parser.feed(decoder.decode(bytes as Uint8Array, { stream: true }));
  });
}

/** The peer: the AI SDK's own `streamText`, stopped with its AbortController. */
function streamTextRow(provider: RemoteProvider, sockets: SocketWatch): Row {
  const model = createOpenAICompatible({ name: "bench", baseURL: provider.url }).chatModel("m");
  return abortedReadRow("ai-sdk-streamText", provider, sockets, async (prompt, signal) => {
    const result = streamText({ model, prompt, abortSignal: signal, maxRetries: 0, onError: () => {} });
    for await (const text of result.textStream) void text;
  });
}

function summarizeRow(samples: readonly StopSample[]) {
  const closed = samples.filter((sample) => Number.isFinite(sample.stopToCloseMs));
  const chunksAfter = samples.map((sample) => sample.chunksAfter);
  return {
    runs: samples.length,
    notClosedWithin2s: samples.length - closed.length,
    stopToCloseMs: summarize(samples.map((sample) => sample.stopToCloseMs)),
    stopToClientSocketDestroyedMs: summarize(samples.map((sample) => sample.stopToDestroyMs)),
    acceptedToCloseMs: samples[0]?.acceptedToCloseMs === undefined ? undefined : summarize(samples.map((sample) => sample.acceptedToCloseMs!)),
    callToAcceptedMs: samples[0]?.callToAcceptedMs === undefined ? undefined : summarize(samples.map((sample) => sample.callToAcceptedMs!)),
    chunksAfter: summarize(chunksAfter),
    chunksAfterHistogram: histogram(chunksAfter),
    chunksAfterClientDestroyHistogram: histogram(samples.map((sample) => sample.chunksAfterDestroy)),
    raw: {
      stopToCloseMs: samples.map((sample) => round(sample.stopToCloseMs)),
      chunksAfter,
    },
    chunksAtStop: summarize(samples.map((sample) => sample.chunksAtStop)),
    chunk50ToStopMs: summarize(samples.map((sample) => sample.chunk50ToStopMs)),
    clientDestroyToProviderCloseMs: summarize(samples.map((sample) => sample.destroyToCloseMs)),
  };
}

function histogram(values: readonly number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[String(value)] = (counts[String(value)] ?? 0) + 1;
  return counts;
}

/** Stop pressed → the upstream provider sees its socket close, and chunks it wrote after the cancel. */
export const providerStop: Benchmark = {
  name: "provider-stop",
  summary: `Stop after chunk ${CHUNKS_BEFORE_STOP} of a 5 ms/chunk OpenAI-compatible stream (provider in a child process): Stop → upstream socket closed, chunks after; Tidemark (lean reader, AI SDK adapter, HTTP POST /cancel to an embedded server) vs the raw fetch floor and the AI SDK's streamText`,
  async run({ log }): Promise<BenchmarkResult> {
    const temp = createTempDir("provider-stop");
    const provider = await startRemoteProvider(SCENARIO);
    const clock = await provider.clockOffset(CLOCK_PINGS);
    const sockets = watchSocketDestroys(new URL(provider.url).port);
    const rows: Row[] = [];
    const samples = new Map<RowName, StopSample[]>();
    const startedAt = performance.now();
    try {
      const aiSdkModel = createOpenAICompatible({ name: "bench", baseURL: provider.url }).chatModel("m");
      rows.push(
        await tidemarkRow("tidemark-lean", provider, withRetries(createOpenAICompatibleModel({ model: "m", baseURL: provider.url })), temp.dir, sockets),
        await tidemarkRow("tidemark-ai-sdk", provider, withRetries(fromAISDKModel(aiSdkModel)), temp.dir, sockets),
        await httpRow(provider, withRetries(createOpenAICompatibleModel({ model: "m", baseURL: provider.url })), temp.dir, sockets),
        rawFetchRow(provider, sockets),
        streamTextRow(provider, sockets),
      );
      for (const row of rows) samples.set(row.name, []);
      const exclusive = createExclusive();
      let markers = 0;
      const once = async (row: Row): Promise<StopSample> => {
        const started = await exclusive(() => withTimeout(row.start(`[bench ${++markers}]`), 10_000, `${row.name} to start`));
        const chunk50At = await provider.chunkReached(started.requestId, CHUNKS_BEFORE_STOP, 10_000);
        return exclusive(() => started.stop(chunk50At));
      };
      for (let index = 0; index < WARMUP_RUNS_PER_ROW; index++) for (const row of rows) await once(row);
      log(`provider-stop: warmed up (${WARMUP_RUNS_PER_ROW} runs per row)`);
      const iterations = MEASURED_RUNS_PER_ROW / LANES;
      const lane = async (laneIndex: number): Promise<void> => {
        // Staggered starts, so the lanes' Stops rarely queue behind each other.
        await new Promise((resolve) => setTimeout(resolve, laneIndex * 95));
        for (let iteration = 0; iteration < rows.length * iterations; iteration++) {
          const row = rows[(iteration + laneIndex) % rows.length]!;
          samples.get(row.name)!.push(await once(row));
        }
      };
      await Promise.all(Array.from({ length: LANES }, (_, laneIndex) => lane(laneIndex)));
      log(`provider-stop: ${MEASURED_RUNS_PER_ROW} runs per row measured in ${round((performance.now() - startedAt) / 1000, 1)} s`);
    } finally {
      for (const row of rows) await row.close();
      await provider.close();
      sockets.close();
      temp.remove();
    }

    const lean = samples.get("tidemark-lean")!;
    const adapter = samples.get("tidemark-ai-sdk")!;
    const http = samples.get("tidemark-http")!;
    const raw = samples.get("raw-fetch")!;
    const peer = samples.get("ai-sdk-streamText")!;
    const p = (rowSamples: StopSample[], q: number, of: (sample: StopSample) => number = (sample) => sample.stopToCloseMs) =>
      round(percentile(rowSamples.map(of), q));
    const toDestroy = (sample: StopSample) => sample.stopToDestroyMs;
    const maxChunks = (rowSamples: StopSample[]) => Math.max(...rowSamples.map((sample) => sample.chunksAfter));
    const peerP50 = { label: "streamText abort() p50", value: p(peer, 50) };
    const peerP99 = { label: "streamText abort() p99", value: p(peer, 99) };
    const peerDestroyP99 = { label: "streamText abort() p99", value: p(peer, 99, toDestroy) };
    const peerChunks = { label: "streamText max", value: maxChunks(peer) };
    const rowFigures = (label: string, rowSamples: StopSample[]): Figure[] => [
      compared({ label: `${label}: cancelRun() → upstream socket closed p50`, value: p(rowSamples, 50), unit: "ms" }, peerP50),
      {
        ...compared({ label: `${label}: cancelRun() → upstream socket closed p99`, value: p(rowSamples, 99), unit: "ms" }, peerP99),
        target: "≤ 5 ms and ≤ peer",
        isMet: p(rowSamples, 99) <= 5 && p(rowSamples, 99) <= peerP99.value,
      },
      {
        // No ratio: the peer's count is often 0.
        label: `${label}: chunks after cancel accepted (max of ${rowSamples.length})`,
        value: maxChunks(rowSamples),
        unit: "chunks",
        baseline: peerChunks,
        target: "≤ 1 and ≤ peer",
        isMet: maxChunks(rowSamples) <= 1 && maxChunks(rowSamples) <= peerChunks.value,
      },
      compared({ label: `${label}: cancelRun() → client socket destroyed p99`, value: p(rowSamples, 99, toDestroy), unit: "ms" }, peerDestroyP99),
      { label: `${label}: cancelRun() → accepted (store tx) p99`, value: p(rowSamples, 99, (sample) => sample.callToAcceptedMs!), unit: "ms" },
    ];
    // Issue 18's HTTP Stop: against the floor (a raw fetch's abort) and the round trip it cannot avoid.
    const rawP50 = p(raw, 50);
    const barePostP50 = p(http, 50, (sample) => sample.barePostMs!);
    const httpP50 = p(http, 50);
    const httpP99 = p(http, 99);
    const httpFigures: Figure[] = [
      compared({ label: "HTTP POST /cancel → upstream socket closed p50", value: httpP50, unit: "ms" }, { label: "raw abort() p50", value: rawP50 }),
      {
        ...compared({ label: "HTTP POST /cancel → upstream socket closed p99", value: httpP99, unit: "ms" }, { label: "raw abort() p99", value: p(raw, 99) }),
        target: "≤ 5 ms",
        isMet: httpP99 <= 5,
      },
      {
        label: "HTTP Stop p50 − (bare POST round trip p50 + raw abort() p50)",
        value: round(httpP50 - (barePostP50 + rawP50)),
        unit: "ms",
        target: "≤ 1 ms",
        isMet: httpP50 - (barePostP50 + rawP50) <= 1,
      },
      { label: "bare POST round trip to the same server p50", value: barePostP50, unit: "ms" },
      { label: "HTTP POST /cancel → 202 p50", value: p(http, 50, (sample) => sample.callToAcceptedMs!), unit: "ms" },
      { label: "HTTP Stop: chunks after the 202 (max)", value: maxChunks(http), unit: "chunks", target: "≤ 1", isMet: maxChunks(http) <= 1 },
      { label: "raw fetch: abort() → upstream socket closed p50", value: rawP50, unit: "ms" },
      { label: "raw fetch: abort() → upstream socket closed p99", value: p(raw, 99), unit: "ms" },
    ];
    return {
      figures: [
        ...rowFigures("lean reader", lean),
        ...rowFigures("AI SDK adapter", adapter),
        ...httpFigures,
        { label: "peer streamText: abort() → upstream socket closed p50", value: peerP50.value, unit: "ms" },
        { label: "peer streamText: abort() → upstream socket closed p99", value: peerP99.value, unit: "ms" },
        { label: "peer streamText: chunks after abort() (max)", value: peerChunks.value, unit: "chunks" },
        { label: "peer streamText: abort() → client socket destroyed p99", value: peerDestroyP99.value, unit: "ms" },
      ],
      details: {
        scenario: SCENARIO,
        chunksBeforeStop: CHUNKS_BEFORE_STOP,
        runs: { warmupPerRow: WARMUP_RUNS_PER_ROW, measuredPerRow: MEASURED_RUNS_PER_ROW, lanes: LANES },
        method:
          "provider in a child process (node -e, IPC): it reports each streaming request's arrival, its 1st and 50th chunk, and on close every chunk time and " +
          "the response's close time, all as performance.timeOrigin + performance.now(); Stop starts at runtime.cancelRun() (Tidemark) or controller.abort() (peer), " +
          "taken the same way in this process, so close − Stop is measured across processes and excludes what this process does after the Stop; " +
          "client socket destroyed = first destroy() of a client socket to the provider after Stop (this process); " +
          "chunks after = the child's chunk times after the onCancelAccepted time (Tidemark) or the abort() time (peer); " +
          "3 lanes rotate over the rows, run starts and Stops are serialized across lanes",
        clockCheck: {
          note: "child clock − this clock by IPC ping-pong (fastest of the pings); not applied, the error bound is ± rtt/2",
          offsetMs: round(clock.offsetMs, 3),
          rttMs: round(clock.rttMs, 3),
        },
        rows: {
          "tidemark-lean (withRetries(createOpenAICompatibleModel))": summarizeRow(lean),
          "tidemark-ai-sdk (withRetries(fromAISDKModel(openai-compatible)))": summarizeRow(adapter),
          "tidemark-http (embedded server + SSE client here; Stop = POST /v1/runs/{id}/cancel)": {
            ...summarizeRow(http),
            barePostMs: summarize(http.map((sample) => sample.barePostMs!)),
          },
          "raw-fetch (fetch + eventsource-parser, abort(): the floor)": summarizeRow(raw),
          "ai-sdk-streamText (peer)": summarizeRow(peer),
        },
      },
    };
  },
};
