import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { estimateClockOffset } from "./absolute-clock.js";
import { nextMessage } from "./child-messages.js";
import type { ManyStreamsClientMessage, ManyStreamsClientRequest } from "./many-streams-client.js";
import type { ManyStreamsServerMessage, ManyStreamsServerRequest } from "./many-streams-server.js";
import { superviseChild, type ServeChild } from "./serve-child.js";

/** The processes of the many-streams benchmark: one server, several clients, and how to talk to them. */

const SERVER_PATH = fileURLToPath(new URL("./many-streams-server.js", import.meta.url));
const CLIENT_PATH = fileURLToPath(new URL("./many-streams-client.js", import.meta.url));

/** A supervised child with its IPC channel. */
export interface ChildWithChannel<Request, Message extends { type: string }> {
  process: ChildProcess;
  supervised: ServeChild;
  send(request: Request): void;
  next<K extends Message["type"]>(type: K, timeoutMs: number): Promise<Extract<Message, { type: K }>>;
}

function withChannel<Request, Message extends { type: string }>(child: ChildProcess, supervised: ServeChild): ChildWithChannel<Request, Message> {
  return {
    process: child,
    supervised,
    send: (request) => {
      if (child.connected) child.send(request as object);
    },
    next: (type, timeoutMs) => nextMessage<Message, typeof type>(child, type, timeoutMs),
  };
}

export type ServerChild = ChildWithChannel<ManyStreamsServerRequest, ManyStreamsServerMessage>;
export type ClientChild = ChildWithChannel<ManyStreamsClientRequest, ManyStreamsClientMessage>;

/** Starts the server child and waits until it serves. */
export async function startManyStreamsServer(dbPath: string, periodMs: number, maxChunks: number): Promise<ServerChild> {
  const child = fork(SERVER_PATH, [dbPath, String(periodMs), String(maxChunks)], { execArgv: ["--expose-gc"], stdio: ["ignore", "pipe", "pipe", "ipc"] });
  const ready = nextMessage<ManyStreamsServerMessage, "ready">(child, "ready", 30_000).then((message) => message.url);
  return withChannel(child, await superviseChild("many-streams server", child, ready));
}

/** Starts a client child for `url`. */
export async function startManyStreamsClient(url: string, index: number): Promise<ClientChild> {
  const child = fork(CLIENT_PATH, [url], { execArgv: [], stdio: ["ignore", "pipe", "pipe", "ipc"] });
  return withChannel(child, await superviseChild(`many-streams client ${index}`, child, Promise.resolve(url)));
}

/** Child clock − this clock, by IPC ping-pong (the fastest of 9). */
export async function clockOffset(child: ServerChild | ClientChild): Promise<number> {
  const { offsetMs } = await estimateClockOffset(9, async () => {
    const pong = nextMessage<{ type: "pong"; at: number }, "pong">(child.process, "pong", 5_000);
    child.process.send({ type: "ping" });
    return (await pong).at;
  });
  return offsetMs;
}
