import { serve } from "@hono/node-server";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { createApp, type AppOptions } from "./create-app.js";

/** A running HTTP server. */
export interface RunningServer {
  /** e.g. `http://127.0.0.1:8787` */
  url: string;
  port: number;
  server: Server;
  /** Stops accepting connections and closes open ones (SSE streams included). */
  close(): Promise<void>;
}

/** Serves the API on `host:port` (port 0 picks a free one). */
export async function startServer(options: AppOptions & { host: string; port: number }): Promise<RunningServer> {
  const app = createApp(options);
  const server = await new Promise<Server>((resolve, reject) => {
    const started = serve({ fetch: app.fetch, port: options.port, hostname: options.host }, () => resolve(started as Server));
    started.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  const hostForUrl = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${hostForUrl}:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
