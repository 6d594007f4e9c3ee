/** Each failure Node's HTTP parser reports gets its JSON error, as Node's own bare answers map them. */
import type { Duplex } from "node:stream";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../runtime/index.js";
import { createClientErrorHandler } from "./client-error-handler.js";

/** A socket that records what is written to it. */
function fakeSocket(options: { writable?: boolean; headersSent?: boolean } = {}) {
  const socket = {
    writable: options.writable ?? true,
    _httpMessage: options.headersSent === undefined ? undefined : { headersSent: options.headersSent },
    written: undefined as string | undefined,
    isDestroyed: false,
    end(data: string, callback: () => void) {
      socket.written = data;
      callback();
    },
    destroy() {
      socket.isDestroyed = true;
    },
  };
  return socket;
}

const handle = createClientErrorHandler(silentLogger);
const failure = (code: string) => Object.assign(new Error(code), { code });

describe("createClientErrorHandler", () => {
  it.each([
    ["HPE_HEADER_OVERFLOW", "431 Request Header Fields Too Large", "headers_too_large"],
    ["HPE_CHUNK_EXTENSIONS_OVERFLOW", "413 Payload Too Large", "payload_too_large"],
    ["ERR_HTTP_REQUEST_TIMEOUT", "408 Request Timeout", "request_timeout"],
    ["HPE_INVALID_METHOD", "400 Bad Request", "malformed_request"],
    ["HPE_INVALID_HEADER_TOKEN", "400 Bad Request", "malformed_request"],
  ])("%s → %s with a JSON error, then the connection closes", (parserCode, statusLine, code) => {
    const socket = fakeSocket();

    handle(failure(parserCode), socket as unknown as Duplex);

    const [head = "", body = ""] = socket.written!.split("\r\n\r\n");
    expect(head.split("\r\n")).toEqual([
      `HTTP/1.1 ${statusLine}`,
      "content-type: application/json",
      `content-length: ${Buffer.byteLength(body)}`,
      "connection: close",
    ]);
    expect(JSON.parse(body)).toEqual({ error: code, message: expect.any(String) });
    expect(socket.isDestroyed).toBe(true);
  });

  it("answers a HEAD with the headers alone (found by the HTTP fuzz: its body broke the client's parser)", () => {
    const socket = fakeSocket();
    const rawPacket = Buffer.from(`HEAD /v1/threads HTTP/1.1\r\nX-Padding: ${"a".repeat(100)}`);

    handle(Object.assign(failure("HPE_HEADER_OVERFLOW"), { rawPacket }), socket as unknown as Duplex);

    const [head = "", body] = socket.written!.split("\r\n\r\n");
    expect(head.split("\r\n")).toEqual([
      "HTTP/1.1 431 Request Header Fields Too Large",
      "content-type: application/json",
      `content-length: ${Buffer.byteLength(JSON.stringify({ error: "headers_too_large", message: "The request's headers are too large." }))}`,
      "connection: close",
    ]);
    expect(body).toBe("");
    expect(socket.isDestroyed).toBe(true);
  });

  it.each([
    ["a reset connection", failure("ECONNRESET"), {}],
    ["a client gone mid-request", failure("HPE_INVALID_EOF_STATE"), {}],
    ["a socket that cannot be written", failure("HPE_INVALID_METHOD"), { writable: false }],
    ["a response already under way", failure("HPE_INVALID_METHOD"), { headersSent: true }],
  ])("writes nothing for %s, and closes", (_name, error, options) => {
    const socket = fakeSocket(options);

    handle(error, socket as unknown as Duplex);

    expect(socket.written).toBeUndefined();
    expect(socket.isDestroyed).toBe(true);
  });
});
