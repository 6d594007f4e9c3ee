import type { ServerResponse } from "node:http";
import type { RunEventBuffer } from "./run-event-buffer.js";
import { createSseBodyWriter } from "./sse-body-writer.js";
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
  /**
   * A subscriber cut for being too slow is sent a last comment saying why, then the end of the
   * response; if its socket cannot take even that within this long, it is destroyed (default 5 s).
   */
  farewellTimeoutMs?: number;
  /** The response's status (default 200; a run created by this request answers 201). */
  status?: number;
  /** Headers to send besides the stream's own (such as the created run's `Location`). */
  headers?: Record<string, string>;
  /** Called with the number of events written, after each write. */
  onFramesWritten?: (count: number) => void;
  /** Called when the subscriber is cut off for being too slow. */
  onSlowSubscriber?: () => void;
  /** Called once when the connection ends, however it ends. */
  onClose?: (reason: "terminal" | "client_closed" | "slow_subscriber") => void;
}

/** At most this many bytes go into one socket write, so a long replay cannot balloon memory. */
const MAX_BATCH_EVENTS = 512;

/** Why a subscriber was cut: it fell too many events behind, or its socket did not drain for too long. */
export type SlowSubscriberCause = "backlog" | "stalled";

/**
 * The last thing a subscriber cut for being too slow receives: an SSE comment (every client
 * ignores it, so it can never be taken for a run event, which always has a seq) holding the
 * error as JSON, with the seq to resume after (`Last-Event-ID`).
 */
export function slowSubscriberComment(lastEventId: number, cause: SlowSubscriberCause): string {
  const error = {
    error: "subscriber_too_slow",
    message: "This client fell too far behind the run's events; reconnect with Last-Event-ID to resume.",
    cause,
    last_event_id: lastEventId,
  };
  return formatSseComment(`error ${JSON.stringify(error)}`);
}

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
  const farewellTimeoutMs = options.farewellTimeoutMs ?? 5_000;
  let cursor = options.afterSeq;
  let isBlocked = false;
  let isScheduled = false;
  let isClosed = false;
  let stallTimer: NodeJS.Timeout | undefined;

  // A client that left while its reply was prepared (a create that answers with its run's
  // stream may take a while) is gone already: its 'close' came and will not come again.
  if (response.destroyed || response.socket?.destroyed === true) {
    options.onClose?.("client_closed");
    return;
  }
  response.writeHead(options.status ?? 200, {
    ...options.headers,
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  response.flushHeaders();
  const body = createSseBodyWriter(response);

  const close = (reason: "terminal" | "client_closed"): void => {
    if (isClosed) return;
    isClosed = true;
    stop();
    if (reason === "terminal") response.end();
    options.onClose?.(reason);
  };

  const stop = (): void => {
    unsubscribe();
    clearInterval(heartbeat);
    clearTimeout(stallTimer);
    body.drains.off("drain", onDrain);
    response.off("close", onClientClose);
  };

  /**
   * Cuts a subscriber too slow to keep up: a last comment says why and where to resume, and the
   * response ends behind what was already written. Only what is already queued is held, and only
   * for `farewellTimeoutMs`: a socket that cannot take it by then is destroyed.
   */
  const cut = (cause: SlowSubscriberCause): void => {
    if (isClosed) return;
    isClosed = true;
    stop();
    options.onSlowSubscriber?.();
    // The stream is over for this subscriber (its slot is free); the socket only has to drain.
    options.onClose?.("slow_subscriber");
    if (response.destroyed) return;
    const farewell = setTimeout(() => response.destroy(), farewellTimeoutMs);
    // Finished (all of it handed to the kernel) or gone: nothing is held any more.
    const settled = (): void => {
      clearTimeout(farewell);
      response.off("finish", settled);
      response.off("close", settled);
    };
    response.once("finish", settled);
    response.once("close", settled);
    // `cursor` is the last event handed to the socket: everything before the comment.
    response.end(slowSubscriberComment(cursor, cause));
  };

  const flush = (): void => {
    isScheduled = false;
    if (!isClosed && !isBlocked && cursor < buffer.lastSeq) {
      const batch = buffer.framesAfter(cursor, MAX_BATCH_EVENTS);
      cursor = batch.lastSeq;
      const isFull = !body.write(batch.text);
      options.onFramesWritten?.(batch.count);
      if (isFull) block();
      // One batch a turn: a long replay into a socket with room to spare shares the event loop
      // with the run and with the process's other clients instead of filling the kernel's buffer at once.
      else if (cursor < buffer.lastSeq) schedule();
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
      if (buffer.lastSeq - cursor > maxBacklog) cut("backlog");
      return;
    }
    if (isScheduled || isClosed) return;
    isScheduled = true;
    // One write per turn of the event loop, however many events arrived in it.
    setImmediate(flush);
  };

  const block = (): void => {
    isBlocked = true;
    body.drains.once("drain", onDrain);
    stallTimer = setTimeout(() => cut("stalled"), stallTimeoutMs);
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
    if (!isBlocked && !isClosed) body.write(formatSseComment("heartbeat"));
  }, heartbeatMs);
  heartbeat.unref();
  response.on("close", onClientClose);
  schedule();
}
