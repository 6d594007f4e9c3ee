/**
 * A raw HTTP client for the fuzz suite: `fetch` normalises paths (`..`, `%2e`), refuses header
 * values it finds odd and always sends a body as UTF-8, so a fuzzer could never send what a
 * careless or hostile client does. This one sends the path, the headers and the body's bytes as
 * given, reads an SSE answer only for a moment (a live stream never ends by itself), and tells a
 * connection the server dropped without answering apart from an answer.
 */
import { request } from "node:http";

/** One request, exactly as it goes on the wire (the path already percent-encoded, or not). */
export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

/** What came back: an answer, or no answer at all (the connection closed or timed out first). */
export type RawAnswer =
  | { kind: "answer"; status: number; contentType: string; text: string; isStream: boolean }
  | { kind: "no_answer"; reason: string };

/** How long a stream is read before the client hangs up, and how long any answer may take. */
export interface RawClientOptions {
  streamReadMs?: number;
  timeoutMs?: number;
}

/**
 * A client on `baseUrl`. Each request has a connection of its own: on a reused one, a reset
 * could be the client's race with the server closing an idle connection, not the server's fault;
 * on a fresh one, a request without an answer is the server's.
 */
export interface RawClient {
  send(raw: RawRequest): Promise<RawAnswer>;
  close(): void;
}

/** Creates a {@link RawClient}. */
export function createRawClient(baseUrl: string, options: RawClientOptions = {}): RawClient {
  const { hostname, port } = new URL(baseUrl);
  const streamReadMs = options.streamReadMs ?? 300;
  const timeoutMs = options.timeoutMs ?? 20_000;

  function send(raw: RawRequest): Promise<RawAnswer> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (answer: RawAnswer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(answer);
      };
      const headers = { ...raw.headers, ...(raw.body ? { "content-length": String(raw.body.length) } : {}) };
      const outgoing = request({ host: hostname, port, method: raw.method, path: raw.path, headers, agent: false });
      const timer = setTimeout(() => {
        settle({ kind: "no_answer", reason: `no complete answer within ${timeoutMs} ms` });
        outgoing.destroy();
      }, timeoutMs);
      outgoing.on("error", (error: NodeJS.ErrnoException) => settle({ kind: "no_answer", reason: `${error.code ?? ""} ${error.message}` }));
      outgoing.on("response", (incoming) => {
        const contentType = incoming.headers["content-type"] ?? "";
        const isStream = contentType.startsWith("text/event-stream");
        const chunks: Buffer[] = [];
        const finish = () =>
          settle({ kind: "answer", status: incoming.statusCode ?? 0, contentType, text: Buffer.concat(chunks).toString("utf8"), isStream });
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("end", finish);
        // A stream the server ended early, or that this client hangs up on: what was read is the answer.
        incoming.on("error", finish);
        incoming.on("aborted", finish);
        if (isStream) {
          setTimeout(() => {
            finish();
            incoming.destroy();
          }, streamReadMs);
        }
      });
      outgoing.end(raw.body);
    });
  }

  return { send, close: () => {} };
}
