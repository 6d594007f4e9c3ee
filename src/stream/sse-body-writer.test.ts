/**
 * The SSE body writer over a real HTTP server and raw client sockets: the bytes on the wire are
 * HTTP/1.1 chunks a client reads back as the text written, the connection stays usable after the
 * body ends, and an HTTP/1.0 client (no chunked encoding) gets the body as Node writes it.
 */
import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createSseBodyWriter } from "./sse-body-writer.js";

const servers: http.Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

const PIECES = ["data: één\n\n", "", "data: ✓ two\n\n", ": heartbeat\n\n"];

/** A server whose every response writes {@link PIECES} through the writer, then ends. */
async function startServer(): Promise<number> {
  const server = http.createServer(function handlePieces(_request, response) {
    response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
    response.flushHeaders();
    const body = createSseBodyWriter(response);
    for (const piece of PIECES) body.write(piece);
    response.end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
}

/** Sends `requests` on one connection and resolves with every byte received once `isComplete` says so (or the server closes). */
function exchange(port: number, requests: string, isComplete: (received: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(requests));
    let received = "";
    const finish = (): void => {
      socket.destroy();
      resolve(received);
    };
    socket.on("data", (chunk: Buffer) => {
      received += chunk.toString("utf8");
      if (isComplete(received)) finish();
    });
    socket.on("end", finish);
    socket.on("error", reject);
  });
}

/** Decodes a chunked body; throws on a malformed one. */
function dechunk(body: string): { text: string; isTerminated: boolean } {
  const bytes = Buffer.from(body, "utf8");
  let offset = 0;
  let text = "";
  for (;;) {
    const lineEnd = bytes.indexOf("\r\n", offset);
    if (lineEnd < 0) return { text, isTerminated: false };
    const size = Number.parseInt(bytes.subarray(offset, lineEnd).toString("latin1"), 16);
    if (!Number.isInteger(size)) throw new Error(`bad chunk size at ${offset}`);
    if (size === 0) return { text, isTerminated: bytes.subarray(lineEnd, lineEnd + 4).toString("latin1") === "\r\n\r\n" };
    text += bytes.subarray(lineEnd + 2, lineEnd + 2 + size).toString("utf8");
    if (bytes.subarray(lineEnd + 2 + size, lineEnd + 4 + size).toString("latin1") !== "\r\n") throw new Error("chunk not followed by CRLF");
    offset = lineEnd + 4 + size;
  }
}

const REQUEST = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

describe("createSseBodyWriter", () => {
  it("writes each piece as one chunk, multi-byte text counted in bytes, and the body ends with the response's last chunk", async () => {
    const port = await startServer();
    const received = await exchange(port, REQUEST, (text) => text.endsWith("\r\n0\r\n\r\n"));
    expect(received.startsWith("HTTP/1.1 200 OK")).toBe(true);
    expect(received).toMatch(/transfer-encoding: chunked/i);
    const body = received.slice(received.indexOf("\r\n\r\n") + 4);
    expect(dechunk(body)).toEqual({ text: PIECES.join(""), isTerminated: true });
    // One chunk a non-empty piece: the empty one wrote nothing (it would have ended the body).
    expect(body.split("\r\n").filter((line) => /^[0-9a-f]+$/.test(line))).toEqual([...PIECES.filter(Boolean).map((piece) => Buffer.byteLength(piece).toString(16)), "0"]);
  });

  it("leaves the connection usable: a second request on it is answered in full", async () => {
    const port = await startServer();
    const twice = `${REQUEST}${REQUEST}`;
    const received = await exchange(port, twice, (text) => text.split("\r\n0\r\n\r\n").length === 3);
    const responses = received.split("HTTP/1.1 200 OK").slice(1);
    expect(responses).toHaveLength(2);
    for (const response of responses) expect(dechunk(response.slice(response.indexOf("\r\n\r\n") + 4)).text).toBe(PIECES.join(""));
  });

  it("writes an HTTP/1.0 client's body as Node does: no chunks, read to the close", async () => {
    const port = await startServer();
    const received = await exchange(port, "GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", () => false);
    expect(received.startsWith("HTTP/1.1 200 OK")).toBe(true);
    expect(received).not.toMatch(/transfer-encoding/i);
    expect(received.slice(received.indexOf("\r\n\r\n") + 4)).toBe(PIECES.join(""));
  });
});
