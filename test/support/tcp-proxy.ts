/**
 * A tiny TCP proxy in front of a test server, to make network faults real: `freeze()` stops
 * forwarding on the open connections while keeping them open (a half-open connection, as a
 * dead NAT or a sleeping laptop leaves it), `stall()` does the same to every connection, open now
 * or accepted later (a partition that drops nothing: every request waits, none fails),
 * `dropConnections()` resets the open connections while still accepting new ones (a flaky network),
 * `refuse()` drops every connection and refuses new ones until `accept()` (what clients see of a
 * database server that restarts), and `close()` drops every connection and refuses new ones.
 */
import { createServer, connect, type AddressInfo, type Socket } from "node:net";

export interface TcpProxy {
  url: string;
  /** Connections accepted so far. */
  readonly connectionCount: number;
  /** Stops forwarding bytes on the connections open now; new connections work normally. */
  freeze(): void;
  /**
   * Holds every byte both ways on the connections open now, and from now on accepts new ones
   * without ever connecting them upstream: nothing reaches the target and nothing comes back, and
   * no connection closes.
   */
  stall(): void;
  /** Resolves once a client closes a connection that was frozen. */
  frozenClientClosed: Promise<void>;
  /** Drops the connections open now (the peers see them end); new connections work normally. Returns how many were dropped. */
  dropConnections(): number;
  /** Drops every connection and stops listening on the port (new connections are refused) until {@link accept}. */
  refuse(): Promise<number>;
  /** Listens on the same port again after {@link refuse}. */
  accept(): Promise<void>;
  /** Drops every connection and stops listening (new connections are refused). */
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  const held = new Set<Socket>();
  let connectionCount = 0;
  let isStalled = false;
  let onFrozenClientClosed!: () => void;
  const frozenClientClosed = new Promise<void>((resolve) => (onFrozenClientClosed = resolve));
  const server = createServer((client) => {
    connectionCount++;
    if (isStalled) {
      // Accepted, never answered: the client waits for the server's first byte forever.
      held.add(client);
      client.on("error", () => undefined).on("close", () => held.delete(client));
      return;
    }
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
  const freeze = (isBothWays = false): void => {
    for (const { client, upstream } of pairs) {
      // Nothing more reaches the client, and the upstream's end is never passed on either.
      upstream.unpipe(client);
      if (isBothWays) {
        // Nor does anything more reach the upstream: the client's bytes stay in the proxy.
        client.unpipe(upstream);
        client.pause();
      }
      upstream.pause();
      upstream.removeAllListeners("close");
      upstream.removeAllListeners("error");
      upstream.on("error", () => undefined);
      client.removeAllListeners("close");
      client.on("close", () => {
        upstream.destroy();
        onFrozenClientClosed();
      });
      held.add(client);
    }
    pairs.clear();
  };
  return {
    url: `http://127.0.0.1:${port}`,
    get connectionCount() {
      return connectionCount;
    },
    freeze: () => freeze(),
    stall() {
      isStalled = true;
      freeze(true);
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
    async refuse() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const dropped = pairs.size + held.size;
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      pairs.clear();
      for (const client of held) client.destroy();
      await closed;
      return dropped;
    },
    async accept() {
      await new Promise<void>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => {
          server.off("error", reject);
          resolve();
        });
      });
    },
    async close() {
      if (!server.listening) {
        for (const client of held) client.destroy();
        return;
      }
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      for (const client of held) client.destroy();
      await closed;
    },
  };
}
