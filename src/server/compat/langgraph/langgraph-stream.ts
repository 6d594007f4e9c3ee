/**
 * Writes a run's stream parts as the Agent Server's SSE response: replay from a cursor, then live,
 * ending after the run's terminal event. A socket that fills waits for `drain`; a closed one ends
 * the stream (the run goes on, unless it was created with `on_disconnect: "cancel"`).
 */
import type { ServerResponse } from "node:http";
import { isTerminalEventType, type RunRecord } from "../../../core/index.js";
import { runInBackground, runLogFields, type Logger, type Runtime } from "../../../runtime/index.js";
import { followEvents, formatSseComment, type RunEventBuffer } from "../../../stream/index.js";
import { SseBatchWriter } from "../sse-batch-writer.js";
import { formatPart, LangGraphFrames, type StreamCursor } from "./langgraph-frames.js";
import type { StreamMode } from "./langgraph-schemas.js";
import { deletionVersions } from "./langgraph-views.js";

/** What one SSE response streams and how. */
export interface LangGraphStreamOptions {
  runtime: Runtime;
  logger: Logger;
  tenantId: string;
  run: RunRecord;
  buffer: RunEventBuffer;
  /** Parts after this point are sent. */
  cursor: StreamCursor;
  modes: ReadonlySet<StreamMode>;
  /** Extra response headers (`Content-Location`, `Location`). */
  headers: Record<string, string>;
  heartbeatMs?: number;
  /** Called once the response ended: `reachedEnd` when the run's terminal event was sent. */
  onClose?: (reachedEnd: boolean) => void;
}

/** Starts streaming to `response`; returns at once, the stream runs in the background. */
export function streamLangGraphRun(response: ServerResponse, options: LangGraphStreamOptions): void {
  // First: past the stream limit this throws, and the client gets its error instead of a stream.
  const detachSubscriber = options.runtime.attachSubscriber(options.tenantId, options.run.runId);
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
    ...options.headers,
  });
  response.flushHeaders();
  const controller = new AbortController();
  const onClientClose = (): void => controller.abort();
  response.on("close", onClientClose);
  const heartbeat = setInterval(() => {
    if (response.writableLength === 0) response.write(formatSseComment("heartbeat"));
  }, options.heartbeatMs ?? 15_000);
  heartbeat.unref();
  const writer = new SseBatchWriter(response);
  runInBackground(options.logger, "langgraph stream", async () => {
    let reachedEnd = false;
    try {
      reachedEnd = await writeParts(response, writer, options, controller.signal);
    } finally {
      clearInterval(heartbeat);
      response.off("close", onClientClose);
      detachSubscriber();
      writer.end();
      options.onClose?.(reachedEnd);
    }
  }, runLogFields(options.run));
}

async function writeParts(response: ServerResponse, writer: SseBatchWriter, options: LangGraphStreamOptions, signal: AbortSignal): Promise<boolean> {
  const { cursor, buffer, runtime, tenantId, run } = options;
  const isWithinEvent = Number.isFinite(cursor.index);
  const afterSeq = isWithinEvent ? cursor.seq - 1 : cursor.seq;
  if (hasEndedBy(buffer, afterSeq)) return true;
  const frames = new LangGraphFrames({
    run,
    modes: options.modes,
    loadMessages: () => runtime.store.listMessages(tenantId, run.threadId),
    loadDeletionVersions: async () => deletionVersions(await runtime.store.listCheckpoints(tenantId, run.threadId)),
  });
  for await (const event of followEvents(buffer, afterSeq, signal)) {
    const parts = await frames.partsOf(event);
    let text = "";
    parts.forEach((part, index) => {
      if (!(isWithinEvent && event.seq === cursor.seq && index <= cursor.index)) text += formatPart(part, event.seq, index);
    });
    if (text !== "" && !writer.write(text)) await drained(response, signal);
    if (isTerminalEventType(event.type)) return true;
  }
  return false;
}

/** Whether the run's terminal event is at or before `afterSeq` (nothing more will come). */
function hasEndedBy(buffer: RunEventBuffer, afterSeq: number): boolean {
  let last = buffer;
  while (last.successor) last = last.successor;
  return last.terminalEvent !== undefined && afterSeq >= last.terminalEvent.seq;
}

function drained(response: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      response.off("drain", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    response.once("drain", done);
    signal.addEventListener("abort", done, { once: true });
  });
}
