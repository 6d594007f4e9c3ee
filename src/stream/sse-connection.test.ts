/**
 * One SSE connection over a real HTTP server and a real client: replay then live then the end,
 * heartbeats, and a subscriber that stops reading is cut off with bounded server memory.
 */
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEventDraft } from "../core/index.js";
import { readSseEvents, type SseMessage } from "./read-sse.js";
import { RunEventBuffer } from "./run-event-buffer.js";
import { slowSubscriberComment, streamRunEvents, type SseConnectionOptions } from "./sse-connection.js";

type CloseReason = Parameters<NonNullable<SseConnectionOptions["onClose"]>>[0];

const RUN_ID = "run_sse";

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
}

function createDeferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((onResolve) => (resolve = onResolve));
  return { promise, resolve };
}

function delta(text: string): RunEventDraft {
  return { type: "message.delta", run_id: RUN_ID, message_id: "msg_1", text };
}

const completed: RunEventDraft = { type: "run.completed", run_id: RUN_ID, state_version: 3, published_message_id: "msg_1" };

/** A server that streams `buffer` to every GET, after the seq in `?after=`. */
interface SseServer {
  url: string;
  /** Resolves with the server side of the first connection once its headers are sent. */
  connected: Promise<http.ServerResponse>;
  /** Resolves with the reason the first connection ended. */
  closed: Promise<CloseReason>;
  /** The most bytes the first response ever had queued, sampled after each write. */
  maxWritableLength(): number;
}

const servers: http.Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

async function startSseServer(buffer: RunEventBuffer, options: Omit<SseConnectionOptions, "afterSeq"> = {}): Promise<SseServer> {
  const connected = createDeferred<http.ServerResponse>();
  const closed = createDeferred<CloseReason>();
  let maxWritableLength = 0;
  const server = http.createServer(function handleEvents(request, response) {
    const after = Number(new URL(request.url ?? "/", "http://localhost").searchParams.get("after") ?? "0");
    streamRunEvents(response, buffer, {
      ...options,
      afterSeq: after,
      onFramesWritten: () => {
        maxWritableLength = Math.max(maxWritableLength, response.writableLength);
      },
      onClose: (reason) => closed.resolve(reason),
    });
    connected.resolve(response);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connected: connected.promise,
    closed: closed.promise,
    maxWritableLength: () => maxWritableLength,
  };
}

async function openEvents(url: string): Promise<ReadableStream<Uint8Array>> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
  expect(response.headers.get("cache-control")).toBe("no-cache, no-transform");
  return response.body!;
}

describe("streamRunEvents", () => {
  it("replays after the cursor, goes live, and ends the response after the terminal event", async () => {
    const buffer = new RunEventBuffer(RUN_ID);
    buffer.append({ type: "run.started", run_id: RUN_ID, thread_id: "thr_1", attempt: 1, status: "running" });
    buffer.append(delta("Hello"));
    buffer.append(delta(" world"));
    const server = await startSseServer(buffer, { heartbeatMs: 60_000 });

    const received: SseMessage[] = [];
    for await (const message of readSseEvents(await openEvents(`${server.url}/events?after=1`))) {
      received.push(message);
      // Caught up with the replay: the run carries on live.
      if (message.id === "3") {
        buffer.append(delta("\nnext line"));
        buffer.append(completed);
      }
    }

    expect(received.map((message) => [message.id, message.event])).toEqual([
      ["2", "message.delta"],
      ["3", "message.delta"],
      ["4", "message.delta"],
      ["5", "run.completed"],
    ]);
    expect(received.map((message) => JSON.parse(message.data))).toEqual(buffer.eventsBetween(1, 5));
    expect(await server.closed).toBe("terminal");
    expect(buffer.subscriberCount).toBe(0);
  });

  it("goes on with the next attempt's buffer when the run is handed over, to its terminal event", async () => {
    const first = new RunEventBuffer(RUN_ID);
    first.append({ type: "run.started", run_id: RUN_ID, thread_id: "thr_1", attempt: 1, status: "running" });
    first.append(delta("half an answer"));
    const server = await startSseServer(first, { heartbeatMs: 60_000 });

    const second = new RunEventBuffer(RUN_ID, 1_000_000_001);
    const received: SseMessage[] = [];
    for await (const message of readSseEvents(await openEvents(`${server.url}/events?after=0`))) {
      received.push(message);
      if (message.id === "2") {
        // The worker drained: attempt 2 starts on another one.
        first.supersede(second);
        second.append({ type: "run.started", run_id: RUN_ID, thread_id: "thr_1", attempt: 2, status: "running" });
        second.append(delta("a whole answer"));
        second.append(completed);
      }
    }

    expect(received.map((message) => [message.id, message.event])).toEqual([
      ["1", "run.started"],
      ["2", "message.delta"],
      ["1000000001", "run.started"],
      ["1000000002", "message.delta"],
      ["1000000003", "run.completed"],
    ]);
    expect(await server.closed).toBe("terminal");
    expect(first.subscriberCount).toBe(0);
    expect(second.subscriberCount).toBe(0);
  });

  it("replays a finished run in full and ends at once", async () => {
    const buffer = new RunEventBuffer(RUN_ID);
    buffer.append(delta("a"));
    buffer.append(completed);
    const server = await startSseServer(buffer, { heartbeatMs: 60_000 });

    const received: SseMessage[] = [];
    for await (const message of readSseEvents(await openEvents(`${server.url}/events?after=0`))) received.push(message);

    expect(received.map((message) => message.id)).toEqual(["1", "2"]);
    expect(await server.closed).toBe("terminal");
  });

  it("sends a heartbeat comment while the run is quiet", async () => {
    const buffer = new RunEventBuffer(RUN_ID);
    const server = await startSseServer(buffer, { heartbeatMs: 10 });
    const heartbeat = createDeferred<string>();

    const reading = (async () => {
      const received: SseMessage[] = [];
      const body = await openEvents(`${server.url}/events?after=0`);
      for await (const message of readSseEvents(body, { onComment: heartbeat.resolve })) received.push(message);
      return received;
    })();
    expect(await heartbeat.promise).toBe("heartbeat");
    buffer.append(completed);

    expect((await reading).map((message) => message.event)).toEqual(["run.completed"]);
  });

  it("reports a client that goes away as client_closed", async () => {
    const buffer = new RunEventBuffer(RUN_ID);
    const server = await startSseServer(buffer, { heartbeatMs: 60_000 });
    const controller = new AbortController();

    const body = await fetch(`${server.url}/events?after=0`, { signal: controller.signal }).then((response) => response.body!);
    await server.connected;
    controller.abort();
    await body.cancel().catch(() => undefined);

    expect(await server.closed).toBe("client_closed");
    expect(buffer.subscriberCount).toBe(0);
  });

  it("cuts off a subscriber that stops reading, with bounded memory on the server", async () => {
    const buffer = new RunEventBuffer(RUN_ID);
    const server = await startSseServer(buffer, { heartbeatMs: 60_000, stallTimeoutMs: 600_000, maxBacklogEvents: 50, farewellTimeoutMs: 200 });
    const { port } = new URL(server.url);

    // A client that sends its request and then never reads a byte.
    const socket = net.connect(Number(port), "127.0.0.1");
    socket.pause();
    socket.write(`GET /events?after=0 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    const response = await server.connected;
    const serverSocketClosed = new Promise<void>((resolve) => response.socket!.once("close", () => resolve()));
    let closeReason: CloseReason | undefined;
    void server.closed.then((reason) => (closeReason = reason));

    const text = "x".repeat(1_000);
    const totalEvents = 20_000;
    let appendedBytes = 0;
    let seqAtClose: number | undefined;
    for (let index = 0; index < totalEvents; index++) {
      buffer.append(delta(text));
      appendedBytes += text.length;
      if (closeReason !== undefined && seqAtClose === undefined) seqAtClose = buffer.lastSeq;
      // Give the connection its turn of the event loop, as a live run's appends would.
      if (index % 100 === 99) await new Promise(setImmediate);
    }

    expect(await server.closed).toBe("slow_subscriber");
    await serverSocketClosed;
    expect(response.destroyed).toBe(true);
    expect(seqAtClose).toBeDefined();
    expect(seqAtClose!).toBeLessThan(totalEvents);
    // The server holds at most about one write batch, never the backlog.
    expect(server.maxWritableLength()).toBeGreaterThan(0);
    expect(server.maxWritableLength()).toBeLessThan(1_000_000);
    expect(server.maxWritableLength()).toBeLessThan(appendedBytes / 10);
    expect(buffer.subscriberCount).toBe(0);

    // The client, reading at last, finds a cut-off stream: no terminal event, then the close.
    let receivedBytes = 0;
    let receivedText = "";
    socket.on("data", (chunk: Buffer) => {
      receivedBytes += chunk.length;
      if (receivedText.length < 1_000) receivedText += chunk.toString("utf8");
    });
    socket.on("error", () => undefined);
    const clientClosed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    socket.resume();
    await clientClosed;
    expect(receivedText.startsWith("HTTP/1.1 200 OK")).toBe(true);
    expect(receivedBytes).toBeLessThan(appendedBytes);
  });

  it("tells a subscriber it cuts why, and from which event to resume, when its socket drains in time", async () => {
    const buffer = new RunEventBuffer(RUN_ID);
    const server = await startSseServer(buffer, { heartbeatMs: 60_000, stallTimeoutMs: 600_000, maxBacklogEvents: 50, farewellTimeoutMs: 30_000 });
    const { port } = new URL(server.url);
    const socket = net.connect(Number(port), "127.0.0.1");
    socket.pause();
    socket.write(`GET /events?after=0 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
    const response = await server.connected;
    let isCut = false;
    void server.closed.then(() => (isCut = true));
    const text = "y".repeat(1_000);
    for (let index = 0; index < 20_000 && !isCut; index++) {
      buffer.append(delta(text));
      if (index % 100 === 99) await new Promise(setImmediate);
    }
    expect(await server.closed).toBe("slow_subscriber");
    expect(buffer.subscriberCount).toBe(0);

    // Reading again within the bound, the client gets every event written before the cut, the
    // comment that names the last of them, and the end of the response.
    const chunks: Buffer[] = [];
    const ended = new Promise<void>((resolve) => {
      socket.once("end", () => resolve());
      socket.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        // The chunked response's terminator: the server may keep the connection open a while after it.
        if (chunk.toString("latin1").endsWith("\r\n0\r\n\r\n")) resolve();
      });
    });
    socket.resume();
    await ended;
    socket.destroy();
    expect(response.destroyed || response.writableFinished).toBe(true);
    const raw = Buffer.concat(chunks).toString("utf8");
    const body = raw.slice(raw.indexOf("\r\n\r\n") + 4);
    const ids = [...body.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
    expect(ids.length).toBeGreaterThan(0);
    expect(ids).toEqual(ids.map((_, index) => index + 1));
    const lastId = ids.at(-1)!;
    expect(lastId).toBeLessThan(buffer.lastSeq);
    const comment = slowSubscriberComment(lastId, "backlog");
    expect(body).toContain(comment);
    // The comment comes after the last event (chunked encoding may split the frames, not reorder them).
    expect(body.lastIndexOf(comment)).toBeGreaterThan(body.lastIndexOf(`id: ${lastId}\n`));
    const parsed = JSON.parse(comment.slice(": error ".length)) as Record<string, unknown>;
    expect(parsed).toMatchObject({ error: "subscriber_too_slow", cause: "backlog", last_event_id: lastId });
  });
});

describe("a client that left before its stream began", () => {
  it("is closed at once as client_closed: no subscription, no heartbeat kept for it", async () => {
    const buffer = new RunEventBuffer(RUN_ID);
    buffer.append(delta("one"));
    const closed = createDeferred<CloseReason>();
    const requested = createDeferred<void>();
    // As a create that answers with the stream does: the client may leave while the run is being created.
    const server = http.createServer(function handleLate(_request, response) {
      response.once("close", () => streamRunEvents(response, buffer, { afterSeq: 0, heartbeatMs: 1, onClose: (reason) => closed.resolve(reason) }));
      requested.resolve();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const socket = net.connect(port, "127.0.0.1");
    socket.write("GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n");
    await requested.promise;
    socket.destroy();
    expect(await closed.promise).toBe("client_closed");
    expect(buffer.subscriberCount).toBe(0);
  });
});
