/**
 * Node's answer to a request it cannot parse (`clientError`: headers too large, malformed HTTP,
 * a request not received in time) is a bare status line. This writes Tidemark's JSON error
 * instead, so that every answer a client gets has a stable code, then closes the connection as
 * Node does: the rest of what the client sent cannot be read as HTTP.
 */
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { ERROR_CODES, type ErrorCode } from "../core/index.js";
import type { Logger } from "../runtime/index.js";

/** The error Node's HTTP parser reports (`HPE_…` codes come from llhttp), with the bytes it was parsing. */
type ClientError = Error & { code?: string; rawPacket?: Buffer };

/** The client closed or reset the connection: an abort, not a malformed request. */
const CLIENT_GONE = new Set(["ECONNRESET", "HPE_INVALID_EOF_STATE"]);

/** What each parser failure means, in the API's codes (as Node's own default answers map them). */
function describeClientError(error: ClientError): { code: ErrorCode; message: string } {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return { code: "headers_too_large", message: "The request's headers are too large." };
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { code: "payload_too_large", message: "The request's chunk extensions are too large." };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { code: "request_timeout", message: "The request was not received in time." };
    default:
      return { code: "malformed_request", message: "The request is not valid HTTP." };
  }
}

/** A `clientError` listener for the Node server: a JSON error with a stable code, then close. */
export function createClientErrorHandler(logger: Logger) {
  return function handleClientError(error: ClientError, socket: Duplex): void {
    // A peer that is gone (reset, or closed mid-request) hears nothing; a response already under
    // way must not be corrupted.
    const response = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (CLIENT_GONE.has(error.code ?? "") || !socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const { code, message } = describeClientError(error);
    const status = ERROR_CODES[code].status;
    const body = JSON.stringify({ error: code, message });
    logger.info({ error: code, parser_code: error.code ?? null }, "refused a request that is not valid HTTP");
    // The answer to a HEAD has no body: a client would read one as garbage after the headers.
    const isHead = error.rawPacket?.subarray(0, 5).toString("latin1") === "HEAD ";
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        "content-type: application/json\r\n" +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        "connection: close\r\n\r\n" +
        (isHead ? "" : body),
      () => socket.destroy(),
    );
  };
}
