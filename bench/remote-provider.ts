import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import type { TestProviderScenario } from "../src/testing/index.js";
import { estimateClockOffset, type ClockOffset } from "./absolute-clock.js";
import { withTimeout } from "./bench-support.js";
import { nodeOnCpu } from "./cpu-pinning.js";

/**
 * The OpenAI-compatible test provider in a child process, reporting over IPC. Its event loop is
 * not the client's, so when it "sees a socket close" does not include what the client process
 * does after a Stop. Every time it reports is absolute (`performance.timeOrigin + performance.now()`,
 * ms since the Unix epoch at µs resolution), comparable with `absoluteNow()` (absolute-clock.ts) in this process.
 */

/** A streaming (`stream: true`) request the child received. */
export interface RemoteRequest {
  /** The provider's 1-based request number. */
  id: number;
  /** Absolute time the request's body had arrived. */
  arrivedAt: number;
  /** `JSON.stringify(body.messages)`, to find a prompt marker in. */
  messages: string;
}

/** A streaming request's response closed (finished or its connection lost), as the child saw it. */
export interface RemoteClose {
  id: number;
  /** Absolute time of the response's `close` event in the child. */
  socketClosedAt: number;
  /** Absolute time of every content chunk written. */
  chunkTimes: number[];
}

export interface RemoteProvider {
  url: string;
  /** The first streaming request whose messages contain `marker` (already arrived or the next one). */
  streamingRequestFor(marker: string, timeoutMs: number): Promise<RemoteRequest>;
  /** Resolves with the absolute time of request `id`'s `count`-th chunk, once the child has written it. */
  chunkReached(id: number, count: number, timeoutMs: number): Promise<number>;
  /** Resolves when request `id`'s response closed in the child, with its chunk times. */
  closed(id: number): Promise<RemoteClose>;
  /**
   * Child clock minus this clock (ms), by IPC ping-pong: the child's time minus the midpoint of the
   * round trip, taken from the fastest of `pings`; `rttMs` bounds the error (± rtt/2).
   */
  clockOffset(pings: number): Promise<ClockOffset>;
  close(): Promise<void>;
}

type ChildMessage =
  | { type: "ready"; url: string }
  | ({ type: "request" } & RemoteRequest)
  | ({ type: "closed" } & RemoteClose)
  | { type: "chunks"; ticket: number; at?: number; error?: string }
  | { type: "pong"; ticket: number; at: number };

type ParentMessage = { type: "waitChunks"; ticket: number; id: number; count: number } | { type: "ping"; ticket: number };

function childScript(moduleUrl: string, scenario: TestProviderScenario): string {
  return [
    `const { startTestProvider } = await import(${JSON.stringify(moduleUrl)});`,
    `const now = (t = performance.now()) => performance.timeOrigin + t;`,
    `const provider = await startTestProvider({ scenario: ${JSON.stringify(scenario)} });`,
    `const send = (message) => { if (process.connected) process.send(message); };`,
    `let stopped = false;`,
    `(async () => {`,
    `  for (let n = 1; !stopped; n++) {`,
    `    let request;`,
    `    try { request = await provider.waitForRequest(n); } catch { return; }`,
    `    const body = request.body;`,
    `    if (!body || body.stream !== true) continue;`,
    `    send({ type: "request", id: request.id, arrivedAt: now(request.startedAt), messages: JSON.stringify(body.messages) });`,
    // The generation stops in the same 'close' emit, so no chunk is recorded after this.
    `    request.closed.then(() => send({ type: "closed", id: request.id, socketClosedAt: now(request.socketClosedAt), chunkTimes: request.chunkTimes.map((t) => now(t)) }));`,
    `  }`,
    `})();`,
    `process.on("message", (message) => {`,
    `  if (message.type === "ping") return send({ type: "pong", ticket: message.ticket, at: now() });`,
    `  if (message.type !== "waitChunks") return;`,
    `  const request = provider.requests[message.id - 1];`,
    `  provider.waitForChunks(request, message.count).then(`,
    `    () => send({ type: "chunks", ticket: message.ticket, at: now(request.chunkTimes[message.count - 1]) }),`,
    `    (error) => send({ type: "chunks", ticket: message.ticket, error: String(error) }),`,
    `  );`,
    `});`,
    // Ends with its parent (the IPC channel closes) and in any case within ten minutes.
    `process.on("disconnect", () => { stopped = true; provider.close().finally(() => process.exit(0)); });`,
    `setTimeout(() => process.exit(0), 600000).unref();`,
    `send({ type: "ready", url: provider.url });`,
  ].join("\n");
}

/** Starts the test provider in a child process (`node -e`, ESM, with an IPC channel), on `options.cpu` alone when given. */
export async function startRemoteProvider(scenario: TestProviderScenario, options: { cpu?: number } = {}): Promise<RemoteProvider> {
  const moduleUrl = new URL("../src/testing/index.js", import.meta.url).href;
  const { command, args } = nodeOnCpu(options.cpu, ["--input-type=module", "-e", childScript(moduleUrl, scenario)]);
  const child: ChildProcess = spawn(command, args, {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = once(child, "exit");
  const arrived: RemoteRequest[] = [];
  const requestWaiters = new Set<{ marker: string; resolve(request: RemoteRequest): void }>();
  const closes = new Map<number, { promise: Promise<RemoteClose>; resolve(close: RemoteClose): void }>();
  const tickets = new Map<number, (message: ChildMessage) => void>();
  let nextTicket = 0;
  const closeEntry = (id: number) => {
    let entry = closes.get(id);
    if (!entry) {
      let resolve!: (close: RemoteClose) => void;
      const promise = new Promise<RemoteClose>((settle) => (resolve = settle));
      entry = { promise, resolve };
      closes.set(id, entry);
    }
    return entry;
  };
  const ask = (message: ParentMessage) => child.send(message);
  const url = await withTimeout(
    new Promise<string>((resolve, reject) => {
      child.on("message", (raw) => {
        const message = raw as ChildMessage;
        switch (message.type) {
          case "ready":
            return resolve(message.url);
          case "request": {
            const { type: _, ...request } = message;
            arrived.push(request);
            for (const waiter of requestWaiters) {
              if (request.messages.includes(waiter.marker)) {
                requestWaiters.delete(waiter);
                waiter.resolve(request);
              }
            }
            return;
          }
          case "closed": {
            const { type: _, ...close } = message;
            return closeEntry(close.id).resolve(close);
          }
          default: {
            const settle = tickets.get(message.ticket);
            tickets.delete(message.ticket);
            settle?.(message);
          }
        }
      });
      child.once("exit", (code) => reject(new Error(`provider child exited with ${code}`)));
    }),
    20_000,
    "the provider child to listen",
  );
  const call = <T extends ChildMessage>(message: ParentMessage & { ticket: number }): Promise<T> =>
    new Promise((resolve) => {
      tickets.set(message.ticket, (reply) => resolve(reply as T));
      ask(message);
    });
  return {
    url,
    streamingRequestFor(marker, timeoutMs) {
      const found = arrived.find((candidate) => candidate.messages.includes(marker));
      if (found) return Promise.resolve(found);
      let waiter!: { marker: string; resolve(request: RemoteRequest): void };
      const promise = new Promise<RemoteRequest>((resolve) => {
        waiter = { marker, resolve };
        requestWaiters.add(waiter);
      });
      return withTimeout(promise, timeoutMs, `the streaming request for ${marker}`).finally(() => requestWaiters.delete(waiter));
    },
    async chunkReached(id, count, timeoutMs) {
      const reply = await withTimeout(
        call<Extract<ChildMessage, { type: "chunks" }>>({ type: "waitChunks", ticket: ++nextTicket, id, count }),
        timeoutMs,
        `chunk ${count} of request ${id}`,
      );
      if (reply.at === undefined) throw new Error(reply.error ?? `request ${id} ended before chunk ${count}`);
      return reply.at;
    },
    closed: (id) => closeEntry(id).promise,
    clockOffset: (pings) => estimateClockOffset(pings, async () => (await call<Extract<ChildMessage, { type: "pong" }>>({ type: "ping", ticket: ++nextTicket })).at),
    async close() {
      if (child.connected) child.disconnect();
      const hasExited = await withTimeout(exited, 5_000, "the provider child to exit").then(
        () => true,
        () => false,
      );
      if (!hasExited) child.kill();
    },
  };
}
