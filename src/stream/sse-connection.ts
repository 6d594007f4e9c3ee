import type { ServerResponse } from "node:http";
import type { RunEventBuffer } from "./run-event-buffer.js";
import { formatSseComment } from "./sse-frame.js";

/** Options for {@link streamRunEvents}. */
export interface SseConnectionOptions {
  /** Replay events after this seq, then go live. */
  afterSeq: number;
  /** A comment line every this many ms (default 15 s) so clients can detect half-open connections. */
  heartbeatMs?: number;
  /**
   * The most events a blocked subscriber may fall behind the live end before it is disconnected
   * (default 10,000). Its memory is its cursor only; this bounds how long a stalled socket is kept.
   */
  maxBacklogEvents?: number;
  /** Disconnect a subscriber whose socket has not drained for this long (default 30 s). */
  stallTimeoutMs?: number;
  /** Called with the number of events written, after each write. */
  onFramesWritten?: (count: number) => void;
  /** Called when the subscriber is cut off for being too slow. */
  onSlowSubscriber?: () => void;
  /** Called once when the connection ends, however it ends. */
  onClose?: (reason: "terminal" | "client_closed" | "slow_subscriber") => void;
}

/** At most this many bytes go into one socket write, so a long replay cannot balloon memory. */
const MAX_BATCH_EVENTS = 512;

/**
 * Streams a run's events to one SSE response: replay after `afterSeq`, then live, then the
 * terminal event and the end of the response. Writes are batched (one write per wake-up, not per
 * event) and respect backpressure: while the socket is full the connection only keeps a cursor.
 */
export function streamRunEvents(response: ServerResponse, firstBuffer: RunEventBuffer, options: SseConnectionOptions): void {
  let buffer = firstBuffer;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const maxBacklog = options.maxBacklogEvents ?? 10_000;
  const stallTimeoutMs = options.stallTimeoutMs ?? 30_000;
  let cursor = options.afterSeq;
  let isBlocked = false;
  let isScheduled = false;
  let isClosed = false;
  let stallTimer: NodeJS.Timeout | undefined;

  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  response.flushHeaders();

  const close = (reason: "terminal" | "client_closed" | "slow_subscriber"): void => {
    if (isClosed) return;
    isClosed = true;
    unsubscribe();
    clearInterval(heartbeat);
    clearTimeout(stallTimer);
    response.off("drain", onDrain);
    response.off("close", onClientClose);
    if (reason === "terminal") response.end();
    else if (reason === "slow_subscriber") response.destroy();
    options.onClose?.(reason);
  };

  const flush = (): void => {
    isScheduled = false;
    while (!isClosed && !isBlocked && cursor < buffer.lastSeq) {
      const batch = buffer.framesAfter(cursor, MAX_BATCH_EVENTS);
      cursor = batch.lastSeq;
      const isFull = !response.write(batch.text);
      options.onFramesWritten?.(batch.count);
      if (isFull) block();
    }
    if (!isClosed && buffer.terminalEvent && cursor >= buffer.terminalEvent.seq) close("terminal");
    else if (!isClosed && buffer.successor && cursor >= buffer.lastSeq) follow(buffer.successor);
  };

  // The run was handed over to a new attempt: the stream goes on with it, from its first event.
  const follow = (next: RunEventBuffer): void => {
    unsubscribe();
    buffer = next;
    cursor = Math.max(cursor, next.firstSeq - 1);
    unsubscribe = buffer.subscribe(schedule);
    schedule();
  };

  const schedule = (): void => {
    if (isBlocked) {
      // A stalled socket with a growing backlog is cut off; the client reconnects with Last-Event-ID.
      if (buffer.lastSeq - cursor > maxBacklog) {
        options.onSlowSubscriber?.();
        close("slow_subscriber");
      }
      return;
    }
    if (isScheduled || isClosed) return;
    isScheduled = true;
    // One write per turn of the event loop, however many events arrived in it.
    setImmediate(flush);
  };

  const block = (): void => {
    isBlocked = true;
    response.once("drain", onDrain);
    stallTimer = setTimeout(() => {
      options.onSlowSubscriber?.();
      close("slow_subscriber");
    }, stallTimeoutMs);
  };

  function onDrain(): void {
    isBlocked = false;
    clearTimeout(stallTimer);
    schedule();
  }

  function onClientClose(): void {
    close("client_closed");
  }

  let unsubscribe = buffer.subscribe(schedule);
  const heartbeat = setInterval(() => {
    if (!isBlocked && !isClosed) response.write(formatSseComment("heartbeat"));
  }, heartbeatMs);
  heartbeat.unref();
  response.on("close", onClientClose);
  schedule();
}
