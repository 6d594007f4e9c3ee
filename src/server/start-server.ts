import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { redactLogger, silentLogger } from "../runtime/index.js";
import { createClientErrorHandler } from "./client-error-handler.js";
import { createApp, type AppOptions } from "./create-app.js";
import { createLiveEndpoint } from "./live/live-endpoint.js";
import { createStopAtHeaders } from "./stop-at-request.js";
import type { Timers } from "../core/index.js";

/** A running HTTP server. */
export interface RunningServer {
  /** e.g. `http://127.0.0.1:8787` */
  url: string;
  port: number;
  server: Server;
  /** Ends the live sessions (each turn cut as a disconnect, its heard part published): before the runtime closes. */
  closeLiveSessions(): Promise<void>;
  /**
   * Stops accepting connections, lets the requests being handled finish (up to 10 s), then
   * closes the open connections (SSE streams included: their clients reconnect elsewhere).
   */
  close(): Promise<void>;
}

export interface ServerTimeouts {
  /** A request's headers must arrive within this (default 10 s): a slowloris client is cut with 408. */
  headersTimeoutMs?: number;
  /** A request's headers and body must arrive within this (default 60 s); a response may stream for longer. */
  requestTimeoutMs?: number;
}

/** Serves the API on `host:port` (port 0 picks a free one). */
export async function startServer(given: AppOptions & ServerTimeouts & { host: string; port: number; timers?: Timers }): Promise<RunningServer> {
  // Every line the server writes passes through the runtime's redactor.
  const logger = redactLogger(given.logger ?? silentLogger, given.runtime.redactor);
  const options = { ...given, logger };
  const app = createApp(options);
  const live = createLiveEndpoint({ runtime: options.runtime, apiKeys: options.apiKeys ?? new Map(), logger, timers: options.timers });
  // Requests in their handler (an SSE stream counts only until its handler hands the response over).
  let inFlight = 0;
  let onIdle: (() => void) | undefined;
  const fetch: typeof app.fetch = async (request, env, context) => {
    inFlight++;
    try {
      return await app.fetch(request, env, context);
    } finally {
      inFlight--;
      if (inFlight === 0) onIdle?.();
    }
  };
  const server = await new Promise<Server>((resolve, reject) => {
    const headersTimeout = options.headersTimeoutMs ?? 10_000;
    const serverOptions = {
      headersTimeout,
      requestTimeout: Math.max(options.requestTimeoutMs ?? 60_000, headersTimeout),
      // How often Node checks both: often enough that a timeout is kept within a fifth of it.
      connectionsCheckingInterval: Math.max(50, Math.min(headersTimeout / 5, 5_000)),
    };
    const started = serve({ fetch, port: options.port, hostname: options.host, serverOptions }, () => resolve(started as Server));
    started.once("error", reject);
    started.on("clientError", createClientErrorHandler(logger));
    started.on("upgrade", live.handleUpgrade);
    // A Stop aborts its run at its headers, before the app converts and routes the request.
    if (options.runtime.role !== "worker") started.prependListener("request", createStopAtHeaders(options.runtime, options.apiKeys ?? new Map(), logger));
  });
  const { port } = server.address() as AddressInfo;
  const hostForUrl = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${hostForUrl}:${port}`,
    port,
    server,
    closeLiveSessions: () => live.close(),
    async close() {
      await live.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10_000);
          onIdle = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      server.closeAllConnections();
      await closed;
    },
  };
}
