import WebSocket from "ws";
import { absoluteNow } from "./absolute-clock.js";
import { withTimeout } from "./bench-support.js";

/*
 * A lean scripted client of the live endpoint for the benchmarks (the `ws` package): every frame
 * is kept with the absolute time it arrived, the text of each message is kept as it grows, and a
 * wait looks only at the frames that arrive after it was set (no rescans). Every wait is bounded.
 */

/** A server frame as parsed. */
export type LiveFrame = { type: string; [field: string]: unknown };

/** A frame with the absolute time ({@link absoluteNow}) its message event fired, and its position. */
export interface ReceivedFrame {
  at: number;
  index: number;
  frame: LiveFrame;
}

export interface BenchLiveClient {
  /** Every frame received so far, in order. */
  readonly frames: readonly ReceivedFrame[];
  /** Sends `frame` as JSON; returns absoluteNow() taken just before the send. */
  send(frame: Record<string, unknown>): number;
  /** The first frame at position ≥ `from` (default: the next one) that matches; rejects after `timeoutMs` or on close. */
  waitFor(what: string, matches: (frame: LiveFrame) => boolean, options: { from?: number; timeoutMs: number }): Promise<ReceivedFrame>;
  /** The text of `messageId`'s output.delta frames received so far. */
  textOf(messageId: string): string;
  /** Closes the socket and waits for the close (bounded). */
  close(): Promise<void>;
}

interface Waiter {
  matches: (frame: LiveFrame) => boolean;
  resolve: (received: ReceivedFrame) => void;
  reject: (error: Error) => void;
}

/** Connects to `/v1/threads/{threadId}/live` and waits for `session.ready`. */
export async function connectBenchLive(baseUrl: string, threadId: string, options: { keepFrames?: boolean; onFrame?: (frame: LiveFrame) => void; openTimeoutMs?: number } = {}): Promise<BenchLiveClient> {
  const keepFrames = options.keepFrames ?? true;
  const openTimeoutMs = options.openTimeoutMs ?? 10_000;
  const socket = new WebSocket(`${baseUrl.replace(/^http/, "ws")}/v1/threads/${threadId}/live`);
  const frames: ReceivedFrame[] = [];
  const texts = new Map<string, string>();
  const waiters = new Set<Waiter>();
  let count = 0;
  let ready: (() => void) | undefined;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  socket.on("message", (data) => {
    const at = absoluteNow();
    const frame = JSON.parse(String(data)) as LiveFrame;
    const received = { at, index: count++, frame };
    if (keepFrames) frames.push(received);
    if (frame.type === "output.delta") {
      const messageId = frame.message_id as string;
      texts.set(messageId, (texts.get(messageId) ?? "") + (frame.text as string));
    } else if (frame.type === "session.ready") ready?.();
    options.onFrame?.(frame);
    for (const waiter of waiters) {
      if (!waiter.matches(frame)) continue;
      waiters.delete(waiter);
      waiter.resolve(received);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  void closed.then(() => {
    for (const waiter of waiters) waiter.reject(new Error("the live socket closed"));
    waiters.clear();
  });
  await withTimeout(
    new Promise<void>((resolve, reject) => {
      socket.once("open", () => resolve());
      socket.once("error", reject);
      socket.once("unexpected-response", (_request, response) => reject(new Error(`live upgrade refused: ${response.statusCode}`)));
    }),
    openTimeoutMs,
    "the live socket to open",
  );
  await withTimeout(isReady, openTimeoutMs, "session.ready");
  return {
    frames,
    send(frame) {
      const at = absoluteNow();
      socket.send(JSON.stringify(frame));
      return at;
    },
    waitFor(what, matches, { from = count, timeoutMs }) {
      const earlier = keepFrames ? frames.slice(from).find((received) => matches(received.frame)) : undefined;
      if (earlier) return Promise.resolve(earlier);
      if (socket.readyState !== WebSocket.OPEN) return Promise.reject(new Error(`the live socket is closed; no ${what}`));
      let waiter: Waiter | undefined;
      const found = new Promise<ReceivedFrame>((resolve, reject) => {
        waiter = { matches, resolve, reject };
        waiters.add(waiter);
      });
      return withTimeout(found, timeoutMs, what).finally(() => waiters.delete(waiter!));
    },
    textOf: (messageId) => texts.get(messageId) ?? "",
    async close() {
      if (socket.readyState !== WebSocket.CLOSED) socket.close();
      await withTimeout(closed, 10_000, "the live socket to close").catch(() => socket.terminate());
    },
  };
}
