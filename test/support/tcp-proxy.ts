/**
 * A tiny TCP proxy in front of a test server, to make network faults real: `freeze()` stops
 * forwarding on the open connections while keeping them open (a half-open connection, as a
 * dead NAT or a sleeping laptop leaves it), `dropConnections()` resets the open connections while
 * still accepting new ones (a flaky network), and `close()` drops every connection and refuses new ones.
 */
import { createServer, connect, type AddressInfo, type Socket } from "node:net";

export interface TcpProxy {
  url: string;
  /** Connections accepted so far. */
  readonly connectionCount: number;
  /** Stops forwarding bytes on the connections open now; new connections work normally. */
  freeze(): void;
  /** Resolves once a client closes a connection that was frozen. */
  frozenClientClosed: Promise<void>;
  /** Drops the connections open now (the peers see them end); new connections work normally. Returns how many were dropped. */
  dropConnections(): number;
  /** Drops every connection and stops listening (new connections are refused). */
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let connectionCount = 0;
  let onFrozenClientClosed!: () => void;
  const frozenClientClosed = new Promise<void>((resolve) => (onFrozenClientClosed = resolve));
  const server = createServer((client) => {
    connectionCount++;
    const upstream = connect(Number(target.port), target.hostname);
    const pair = { client, upstream };
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get connectionCount() {
      return connectionCount;
    },
    freeze() {
      for (const { client, upstream } of pairs) {
        // Nothing more reaches the client, and the upstream's end is never passed on either.
        upstream.unpipe(client);
        upstream.pause();
        upstream.removeAllListeners("close");
        upstream.removeAllListeners("error");
        upstream.on("error", () => undefined);
        client.removeAllListeners("close");
        client.on("close", () => {
          upstream.destroy();
          onFrozenClientClosed();
        });
      }
      pairs.clear();
    },
    frozenClientClosed,
    dropConnections() {
      const open = [...pairs];
      pairs.clear();
      for (const { client, upstream } of open) {
        client.destroy();
        upstream.destroy();
      }
      return open.length;
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await closed;
    },
  };
}
