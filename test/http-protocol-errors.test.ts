/**
 * What the server answers, and logs, below the API (issue 11 #21): a request Node cannot parse
 * gets a JSON error with a stable code, a client that aborts its upload is no server error, and
 * HEAD on an events stream answers like GET without a stream (and without an error).
 */
import { connect } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createId } from "../src/core/index.js";
import type { Logger } from "../src/runtime/index.js";
import { startHarness, type Harness } from "./support/harness.js";

interface LogEntry {
  level: "info" | "warn" | "error";
  message: string;
  data: Record<string, unknown>;
}

/** A logger that keeps every entry and can wait for one. */
function recordingLogger() {
  const entries: LogEntry[] = [];
  const waiters: { test: (entry: LogEntry) => boolean; resolve: (entry: LogEntry) => void }[] = [];
  const record = (level: LogEntry["level"]) => (data: Record<string, unknown>, message: string) => {
    const entry = { level, message, data };
    entries.push(entry);
    for (const waiter of waiters.filter(({ test }) => test(entry))) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve(entry);
    }
  };
  const logger: Logger = { info: record("info"), warn: record("warn"), error: record("error") };
  return {
    logger,
    entries,
    /** Resolves with the first entry (already logged or still to come) that `test` accepts. */
    next(test: (entry: LogEntry) => boolean): Promise<LogEntry> {
      const found = entries.find(test);
      return found ? Promise.resolve(found) : new Promise((resolve) => waiters.push({ test, resolve }));
    },
  };
}

/** Writes `request` on a new connection; resolves with everything the server sent once it closed. */
function exchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.write(request));
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("close", () => resolve(received));
    socket.on("error", reject);
  });
}

/** Writes `partial` of a request on a new connection, then closes it without sending the rest. */
function abortUpload(port: number, partial: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => socket.end(partial));
    socket.on("close", () => resolve());
    socket.on("error", reject);
  });
}

/** The status, headers (lower-case names) and body of one raw HTTP/1.1 response. */
function parseResponse(raw: string) {
  const [head = "", body = ""] = raw.split("\r\n\r\n");
  const [statusLine = "", ...headerLines] = head.split("\r\n");
  const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
  return { status: Number(statusLine.split(" ")[1]), statusLine, headers, body };
}

describe("requests Node cannot parse, aborted uploads, HEAD on a stream", () => {
  const log = recordingLogger();
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ logger: log.logger, demo: { wordsPerSecond: 0, wordCount: 20 } });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    // Nothing here is a server failure.
    expect(log.entries.filter((entry) => entry.level === "error")).toEqual([]);
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("headers over Node's limit: 431 with a JSON error", async () => {
    const raw = await exchange(h.tidemark.port, `GET /v1/threads HTTP/1.1\r\nHost: x\r\nX-Padding: ${"a".repeat(20_000)}\r\n\r\n`);

    const response = parseResponse(raw);
    expect(response.statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(response.headers).toMatchObject({ "content-type": "application/json", connection: "close" });
    expect(Number(response.headers["content-length"])).toBe(Buffer.byteLength(response.body));
    expect(JSON.parse(response.body)).toEqual({ error: "headers_too_large", message: "The request's headers are too large." });
  });

  it("headers over Node's limit on a HEAD: 431 with the headers alone (a body would be garbage to the client)", async () => {
    const raw = await exchange(h.tidemark.port, `HEAD /v1/threads HTTP/1.1\r\nHost: x\r\nX-Padding: ${"a".repeat(20_000)}\r\n\r\n`);

    const response = parseResponse(raw);
    expect(response.statusLine).toBe("HTTP/1.1 431 Request Header Fields Too Large");
    expect(response.headers).toMatchObject({ "content-type": "application/json", connection: "close" });
    expect(response.body).toBe("");
  });

  it.each([
    ["a header without a colon", "GET /v1/threads HTTP/1.1\r\nHost x\r\n\r\n"],
    ["a broken request line", "GET\r\n\r\n"],
    ["a NUL in a header value", "GET /v1/threads HTTP/1.1\r\nHost: x\r\nIdempotency-Key: a\u0000b\r\n\r\n"],
    ["a body length that is not a number", "POST /v1/threads HTTP/1.1\r\nHost: x\r\nContent-Length: ten\r\n\r\n"],
    ["a chunk size that is not hex", "POST /v1/threads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"],
  ])("malformed HTTP (%s): 400 malformed_request with a JSON body", async (_name, request) => {
    const response = parseResponse(await exchange(h.tidemark.port, request));

    expect(response.status).toBe(400);
    expect(response.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(response.body)).toEqual({ error: "malformed_request", message: "The request is not valid HTTP." });
  });

  it.each([
    ["with a Content-Length", "Content-Length: 1000\r\n\r\n"],
    ["chunked", "Transfer-Encoding: chunked\r\n\r\n10\r\n"],
  ])("an upload the client aborts (%s) is logged as an abort at info, not as an error", async (_name, framing) => {
    const logged = log.next((entry) => entry.message.includes("closed the connection"));

    await abortUpload(h.tidemark.port, `POST /v1/threads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}{"metadata": {"a`);

    expect(await logged).toMatchObject({ level: "info", data: { path: "/v1/threads" } });
    log.entries.splice(log.entries.indexOf(await logged), 1);
    // The server goes on serving.
    expect((await h.api("/v1/threads", { method: "POST", json: {} })).status).toBe(201);
  });

  it("HEAD on a run's events: the GET's status and headers, no body, no stream, no error", async () => {
    const consoleError = vi.spyOn(console, "error");
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);

    const head = await fetch(`${h.url}/v1/runs/${run.run_id}/events`, { method: "HEAD" });

    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await head.text()).toBe("");
    await h.events(run.run_id);
    // On a connection of its own, the HEAD's answer ends at its headers.
    const raw = await exchange(h.tidemark.port, `HEAD /v1/runs/${run.run_id}/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(parseResponse(raw)).toMatchObject({ status: 200, body: "" });

    const unknown = await fetch(`${h.url}/v1/runs/${createId("run")}/events`, { method: "HEAD" });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get("content-type")).toBe("application/json");
    expect(consoleError).not.toHaveBeenCalled();
  });
});
