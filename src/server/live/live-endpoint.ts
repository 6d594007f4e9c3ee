import type { IncomingMessage } from "node:http";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import { ERROR_CODES, type ErrorCode, type Timers } from "../../core/index.js";
import type { Logger } from "../../core/logger.js";
import type { Runtime } from "../../runtime/index.js";
import { bearerKey, createKeyLookup } from "../auth.js";
import { isWellFormedId } from "../path-id.js";
import { MAX_FRAME_BYTES } from "./live-frames.js";
import { LiveSession } from "./live-session.js";

/** The subprotocol a live client speaks; a browser sends its key as a second one (it cannot set headers). */
export const LIVE_PROTOCOL = "tidemark.live";
const KEY_PROTOCOL_PREFIX = "tidemark.key.";

const LIVE_PATH = /^\/v1\/threads\/([^/]*)\/live$/;

export interface LiveEndpointOptions {
  runtime: Runtime;
  apiKeys: ReadonlyMap<string, string>;
  logger: Logger;
  /** Fake time for the interruption timers in tests. */
  timers?: Timers;
}

/** The live endpoint: `GET /v1/threads/{thread_id}/live`, a WebSocket of JSON frames (DESIGN §12). */
export interface LiveEndpoint {
  /** The HTTP server's `upgrade` listener. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Cuts every session's turn (as a disconnect) and closes the sockets. */
  close(): Promise<void>;
}

export function createLiveEndpoint(options: LiveEndpointOptions): LiveEndpoint {
  const { runtime, logger } = options;
  const tenantOf = createKeyLookup(options.apiKeys);
  const sockets = new Set<WebSocket>();
  const sessions = new Set<Promise<void>>();
  // Frames past MAX_FRAME_BYTES get an error frame and the socket stays; past this, ws closes it (1009).
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: 16 * MAX_FRAME_BYTES,
    handleProtocols: (protocols) => (protocols.has(LIVE_PROTOCOL) ? LIVE_PROTOCOL : false),
  });

  async function admit(request: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const url = new URL(request.url ?? "/", "http://localhost");
    const match = LIVE_PATH.exec(url.pathname);
    if (!match) return refuse(socket, "not_found", "No such route.");
    const tenantId = tenantOf(bearerKey(request.headers.authorization) ?? keyFromProtocols(request.headers["sec-websocket-protocol"]));
    if (!tenantId) return refuse(socket, "unauthorized", `Send a valid API key as Authorization: Bearer <key>, or as the subprotocol ${KEY_PROTOCOL_PREFIX}<base64url(key)>.`);
    if (runtime.role === "api") return refuse(socket, "live_unavailable", "This process executes no runs: connect a live session to one that does.");
    const threadId = decodeURIComponent(match[1]!);
    const thread = isWellFormedId(threadId, "thr") ? await runtime.store.getThread(tenantId, threadId) : undefined;
    if (!thread || thread.status !== "active") return refuse(socket, "thread_not_found", "No such thread.");
    const agent = url.searchParams.get("agent") ?? undefined;
    if (agent !== undefined && !runtime.agents.get(agent)) return refuse(socket, "agent_not_found", `No agent named "${agent.slice(0, 100)}" is deployed.`);
    server.handleUpgrade(request, socket, head, (ws) => {
      sockets.add(ws);
      const session = new LiveSession({ runtime, tenantId, threadId, socket: ws, logger, agent, timers: options.timers });
      ws.on("message", (data: Buffer, isBinary) => session.receive(data, isBinary));
      ws.on("error", (error) => logger.info({ thread_id: threadId, tenant_id: tenantId, error: String(error) }, "a live socket failed"));
      ws.once("close", () => {
        sockets.delete(ws);
        const closed = session.close().catch((error: unknown) => logger.warn({ thread_id: threadId, tenant_id: tenantId, error: String(error) }, "a live session did not close cleanly"));
        sessions.add(closed);
        void closed.finally(() => sessions.delete(closed));
      });
      session.start();
    });
  }

  return {
    handleUpgrade(request, socket, head) {
      socket.on("error", () => socket.destroy());
      admit(request, socket, head).catch((error: unknown) => {
        logger.error({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }, "a live upgrade failed");
        refuse(socket, "internal_error", "Something went wrong on the server.");
      });
    },
    async close() {
      for (const ws of sockets) ws.close(1001, "server closing");
      await Promise.all([...sessions]);
      server.close();
    },
  };
}

/** The key a browser sends as `tidemark.key.<base64url(key)>`. */
function keyFromProtocols(header: string | undefined): string | undefined {
  const offered = (header ?? "").split(",").map((protocol) => protocol.trim());
  const encoded = offered.find((protocol) => protocol.startsWith(KEY_PROTOCOL_PREFIX))?.slice(KEY_PROTOCOL_PREFIX.length);
  return encoded ? Buffer.from(encoded, "base64url").toString("utf8") : undefined;
}

/** Answers the upgrade request with the API's JSON error and closes the connection. */
function refuse(socket: Duplex, code: ErrorCode, message: string): void {
  if (socket.destroyed) return;
  const status = ERROR_CODES[code].status;
  const body = JSON.stringify({ error: code, message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
