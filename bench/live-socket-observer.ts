import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type RawData, type WebSocket } from "ws";
import { absoluteNow } from "./absolute-clock.js";

/*
 * Server-side times of the live endpoint's frames, taken in the bench process where the embedded
 * server runs, without a change to the product: while installed, every `WebSocketServer` of this
 * process hands each accepted socket to the product only after a listener and a `send` wrapper of
 * ours are on it. The listener is added before the product's own `message` listener, so its time is
 * the moment the ws library delivers a client frame, just before the session reads it; the wrapper
 * times each frame as the session calls `send()`, before ws frames and writes it. Each costs one
 * clock read and one array push per frame, and is only there while a benchmark installed it.
 */

/** One frame, with the absolute time ({@link absoluteNow}) the server handled it. */
export interface TimedFrame {
  at: number;
  data: RawData | string;
}

/** One live connection as the server saw it. */
export interface ObservedSocket {
  /** The thread in the upgrade's path. */
  readonly threadId: string;
  /** Client frames, timed as ws delivered them (before the session's listener ran). */
  readonly received: TimedFrame[];
  /** Server frames, timed as the session called `send()`. */
  readonly sent: TimedFrame[];
}

export interface LiveSocketObserver {
  /** The latest connection to `threadId`'s live endpoint. */
  socketOf(threadId: string): ObservedSocket | undefined;
  /** Puts `WebSocketServer.prototype.handleUpgrade` back as it was. */
  restore(): void;
}

type UpgradeCallback = (client: WebSocket, request: IncomingMessage) => void;
type HandleUpgrade = (this: WebSocketServer, request: IncomingMessage, socket: Duplex, head: Buffer, callback: UpgradeCallback) => void;

const LIVE_PATH = /^\/v1\/threads\/([^/?]*)\/live/;

/** The text of a timed frame (client frames arrive as Buffers, server frames are sent as strings). */
export function frameText(frame: TimedFrame): string {
  const { data } = frame;
  if (typeof data === "string") return data;
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data as ArrayBuffer).toString("utf8");
}

/** Starts timing every live socket this process's ws servers accept, until `restore()`. */
export function observeLiveSockets(): LiveSocketObserver {
  const prototype = WebSocketServer.prototype as unknown as { handleUpgrade: HandleUpgrade };
  const original = prototype.handleUpgrade;
  const sockets = new Map<string, ObservedSocket>();
  prototype.handleUpgrade = function observedUpgrade(request, socket, head, callback) {
    original.call(this, request, socket, head, (client, upgradeRequest) => {
      const threadId = decodeURIComponent(LIVE_PATH.exec(upgradeRequest.url ?? "")?.[1] ?? "");
      const observed: ObservedSocket = { threadId, received: [], sent: [] };
      sockets.set(threadId, observed);
      client.on("message", (data: RawData) => void observed.received.push({ at: absoluteNow(), data }));
      const send = client.send.bind(client) as (data: string, ...rest: unknown[]) => void;
      client.send = function timedSend(data: string, ...rest: unknown[]): void {
        observed.sent.push({ at: absoluteNow(), data });
        send(data, ...rest);
      } as typeof client.send;
      callback(client, upgradeRequest);
    });
  };
  return {
    socketOf: (threadId) => sockets.get(threadId),
    restore() {
      prototype.handleUpgrade = original;
      sockets.clear();
    },
  };
}
