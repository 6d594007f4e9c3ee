/**
 * A resilient stream of one run's events (DESIGN §7): SSE over `fetch`, re-joined with
 * `Last-Event-ID` after a drop, with exponential backoff and jitter up to a retry budget, and a
 * heartbeat timeout that notices a half-open connection. Each seq is delivered at most once, in
 * order; a gap or an expired buffer is reported as a `reload` (history is the truth).
 *
 * @example
 * const stream = openRunEventStream(client, run.run_id, (notice) => {
 *   if (notice.kind === "event") console.log(notice.event.type);
 * });
 * await stream.done;
 */
import type { RunEvent } from "../core/run-event.js";
import { readSseEvents } from "../stream/read-sse.js";
import type { TidemarkClient } from "./api-client.js";
import type { ConnectionFailure, ConnectionState } from "./connection-state.js";
import { TidemarkApiError } from "./tidemark-api-error.js";

export type { ConnectionFailure, ConnectionState } from "./connection-state.js";

/** What the stream tells its listener. */
export type StreamNotice =
  | { kind: "event"; event: RunEvent }
  | { kind: "connection"; state: ConnectionState; failure?: ConnectionFailure }
  | { kind: "reload"; reason: "expired" | "gap" };

/** Options for {@link openRunEventStream}. */
export interface RunEventStreamOptions {
  /** Resume after this seq (sent as `Last-Event-ID` and `?after=`). */
  afterSeq?: number;
  /** No bytes (events or heartbeat comments) for this long → reconnect (default 45 s; the server beats every 15 s). */
  heartbeatTimeoutMs?: number;
  /** Backoff between failed attempts; `maxAttempts` consecutive failures → `failed`. Defaults 250, 5000, 8. */
  retry?: { initialDelayMs?: number; maxDelayMs?: number; maxAttempts?: number };
  /** Abort = the user chose to disconnect → state `disconnected`. */
  signal?: AbortSignal;
}

/** An open event stream. */
export interface RunEventStream {
  /** The seq of the last event delivered. */
  readonly lastSeq: number;
  /** Disconnects on purpose (state `disconnected`). */
  close(): void;
  /** Resolves after the terminal event, a reload, a failure or close; never rejects. */
  done: Promise<void>;
}

/** Seqs of attempt n start at (n − 1) × this + 1 (docs/api.md). */
const ATTEMPT_SEQ_SPAN = 1_000_000_000;
const TERMINAL_TYPES: ReadonlySet<string> = new Set(["run.completed", "run.cancelled", "run.failed"]);

type AttemptOutcome =
  | { kind: "ended" }
  | { kind: "closed" }
  | { kind: "reload"; reason: "expired" | "gap"; message: string }
  | { kind: "fatal"; failure: Omit<ConnectionFailure, "attempts"> }
  | { kind: "retry"; hadBytes: boolean; isServerError: boolean };

/** Opens the events of `runId` and reports them, and the connection's state, to `onNotice`. */
export function openRunEventStream(
  client: TidemarkClient,
  runId: string,
  onNotice: (notice: StreamNotice) => void,
  options: RunEventStreamOptions = {},
): RunEventStream {
  const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 45_000;
  const initialDelayMs = options.retry?.initialDelayMs ?? 250;
  const maxDelayMs = options.retry?.maxDelayMs ?? 5_000;
  const maxAttempts = Math.max(1, options.retry?.maxAttempts ?? 8);
  const closer = new AbortController();
  const onCallerAbort = (): void => closer.abort();
  if (options.signal?.aborted) closer.abort();
  options.signal?.addEventListener("abort", onCallerAbort, { once: true });
  let lastSeq = options.afterSeq ?? 0;
  let state: ConnectionState | undefined;

  const emit = (notice: StreamNotice): void => {
    try {
      onNotice(notice);
    } catch (error) {
      // A listener's bug must not look like a network failure: report it, keep streaming.
      setTimeout(() => {
        throw error;
      });
    }
  };
  const setState = (next: ConnectionState, failure?: ConnectionFailure): void => {
    if (next === state) return;
    state = next;
    emit(failure ? { kind: "connection", state: next, failure } : { kind: "connection", state: next });
  };

  async function attempt(): Promise<AttemptOutcome> {
    const controller = new AbortController();
    const onClose = (): void => controller.abort();
    closer.signal.addEventListener("abort", onClose, { once: true });
    let hadBytes = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Armed before the request, so a connection that hangs before its headers is caught too.
    const touch = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(), heartbeatTimeoutMs);
    };
    touch();
    try {
      const headers: Record<string, string> = { ...client.headers(), accept: "text/event-stream" };
      if (lastSeq > 0) headers["last-event-id"] = String(lastSeq);
      const response = await client.fetch(client.eventsUrl(runId, lastSeq), { headers, signal: controller.signal, cache: "no-store" });
      if (response.status !== 200 || !response.body) return await outcomeOfRefusal(response);
      setState("connected");
      const watched = response.body.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, stream) {
            hadBytes = true;
            touch();
            stream.enqueue(chunk);
          },
        }),
      );
      for await (const message of readSseEvents(watched, { signal: controller.signal })) {
        const event = JSON.parse(message.data) as RunEvent;
        if (event.seq <= lastSeq) continue; // a replayed duplicate
        if (!followsOn(lastSeq, event)) {
          return { kind: "reload", reason: "gap", message: `The stream jumped from seq ${lastSeq} to ${event.seq}.` };
        }
        lastSeq = event.seq;
        emit({ kind: "event", event });
        if (TERMINAL_TYPES.has(event.type)) return { kind: "ended" };
        if (closer.signal.aborted) return { kind: "closed" };
      }
      return closer.signal.aborted ? { kind: "closed" } : { kind: "retry", hadBytes, isServerError: false };
    } catch {
      // A network error, a dropped connection or the heartbeat timeout: all are worth a retry.
      return closer.signal.aborted ? { kind: "closed" } : { kind: "retry", hadBytes, isServerError: false };
    } finally {
      clearTimeout(timer);
      closer.signal.removeEventListener("abort", onClose);
      controller.abort();
    }
  }

  async function follow(): Promise<void> {
    let failures = 0;
    let lastRetry: Extract<AttemptOutcome, { kind: "retry" }> | undefined;
    while (!closer.signal.aborted) {
      setState(lastRetry ? "reconnecting" : "connecting");
      const outcome = await attempt();
      switch (outcome.kind) {
        case "ended":
          return;
        case "closed":
          break;
        case "reload":
          emit({ kind: "reload", reason: outcome.reason });
          setState("failed", { reason: "stream_expired", message: outcome.message, attempts: failures + 1 });
          return;
        case "fatal":
          setState("failed", { ...outcome.failure, attempts: failures + 1 });
          return;
        case "retry": {
          // Bytes arrived: the server was reachable, so the budget starts again.
          failures = outcome.hadBytes ? 1 : failures + 1;
          lastRetry = outcome;
          if (failures >= maxAttempts) {
            const failure: ConnectionFailure = outcome.isServerError
              ? { reason: "server_error", message: "The server kept answering with an error.", attempts: failures }
              : { reason: "unreachable", message: "The server could not be reached.", attempts: failures };
            setState("failed", failure);
            return;
          }
          setState("reconnecting");
          const base = Math.min(maxDelayMs, initialDelayMs * 2 ** (failures - 1));
          await abortableDelay(base / 2 + (Math.random() * base) / 2, closer.signal);
        }
      }
    }
    setState("disconnected");
  }

  const done = follow().finally(() => options.signal?.removeEventListener("abort", onCallerAbort));
  return {
    get lastSeq() {
      return lastSeq;
    },
    close: () => closer.abort(),
    done,
  };
}

/** Whether `event` is the next one after `lastSeq`: seq + 1, or the `run.started` of a later attempt. */
function followsOn(lastSeq: number, event: RunEvent): boolean {
  if (event.seq === lastSeq + 1) return true;
  return event.type === "run.started" && event.seq === (event.attempt - 1) * ATTEMPT_SEQ_SPAN + 1;
}

/** What a non-200 reply means for the stream. */
async function outcomeOfRefusal(response: Response): Promise<AttemptOutcome> {
  const error = await TidemarkApiError.fromResponse(response);
  if (response.status === 410) return { kind: "reload", reason: "expired", message: error.message };
  if (response.status === 404) return { kind: "fatal", failure: { reason: "not_found", message: error.message } };
  if (response.status === 401 || response.status === 403) {
    return { kind: "fatal", failure: { reason: "unauthorized", message: error.message } };
  }
  if (response.status >= 500 || response.status === 408 || response.status === 429) {
    return { kind: "retry", hadBytes: false, isServerError: true };
  }
  return { kind: "fatal", failure: { reason: "server_error", message: error.message } };
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const finish = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", finish);
      resolve();
    };
    const timer = setTimeout(finish, ms);
    if (signal.aborted) finish();
    else signal.addEventListener("abort", finish, { once: true });
  });
}
