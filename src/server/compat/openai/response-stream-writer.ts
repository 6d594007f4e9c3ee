/**
 * Writes OpenAI stream events to an SSE response (`event: <type>`, `data: <json>`), waiting on
 * the socket when it is full, with a comment line as a heartbeat. The response ends after the
 * last event; when the client goes away first, `onClientClosed` runs so the caller stops reading.
 */
import type { ServerResponse } from "node:http";
import { SseBatchWriter } from "../sse-batch-writer.js";
import type { ResponseStreamEvent } from "./response-stream-events.js";

/** Options for {@link writeResponseStream}. */
export interface ResponseStreamWriterOptions {
  /** A comment line this often while the stream is idle (default 15 s). */
  heartbeatMs?: number;
  /** Called once if the client closed the connection before the stream ended. */
  onClientClosed(): void;
}

/** One event as an SSE frame. */
export function formatResponseStreamFrame(event: ResponseStreamEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** Streams `events` to `response` as SSE; resolves once the response ended (or the client left). */
export async function writeResponseStream(response: ServerResponse, events: AsyncIterable<ResponseStreamEvent>, options: ResponseStreamWriterOptions): Promise<void> {
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  response.flushHeaders();
  let isClosed = false;
  let wakeWriter: (() => void) | undefined;
  const onClose = (): void => {
    if (isClosed) return;
    isClosed = true;
    wakeWriter?.();
    options.onClientClosed();
  };
  const onDrain = (): void => wakeWriter?.();
  response.on("close", onClose);
  response.on("drain", onDrain);
  const heartbeat = setInterval(() => {
    if (!isClosed && !response.writableNeedDrain) response.write(": keepalive\n\n");
  }, options.heartbeatMs ?? 15_000);
  heartbeat.unref();
  const writer = new SseBatchWriter(response);
  try {
    for await (const event of events) {
      if (isClosed) return;
      if (!writer.write(formatResponseStreamFrame(event))) {
        await new Promise<void>((resolve) => (wakeWriter = resolve));
        wakeWriter = undefined;
        if (isClosed) return;
      }
    }
    isClosed = true;
    writer.end();
  } catch (error) {
    // The headers are sent: a failure can only cut the stream, which the client sees as an error.
    writer.discard();
    response.destroy();
    throw error;
  } finally {
    clearInterval(heartbeat);
    response.off("drain", onDrain);
    response.off("close", onClose);
  }
}
