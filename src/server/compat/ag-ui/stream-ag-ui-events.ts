import type { ServerResponse } from "node:http";
import type { RunEventBuffer } from "../../../stream/index.js";
import { followEvents } from "../../../stream/index.js";
import { SseBatchWriter } from "../sse-batch-writer.js";
import { formatAgUiFrame, type AgUiEvent } from "./ag-ui-event.js";
import type { AgUiTranslator } from "./ag-ui-translator.js";

/** Options for {@link streamAgUiEvents}. */
export interface AgUiStreamOptions {
  /** Translate the native events after this seq (a resumed run: those after its interrupt). */
  afterSeq: number;
  /** A comment line every this many ms (default 15 s) so clients and proxies see traffic. */
  heartbeatMs?: number;
  /** Called when the client goes away before the run ended (its Stop): detaches the run's subscriber. */
  onClientClosed: () => void;
  /** Called when the AG-UI run ended; `isInterrupt` when the native run waits for an approval. */
  onFinished: (isInterrupt: boolean) => void;
  /** Reports a failure of the stream itself (the client has then lost its connection). */
  onError: (error: unknown) => void;
}

/**
 * Writes one AG-UI run to an SSE response: `RUN_STARTED`, then the translated native events after
 * `afterSeq`, until the AG-UI run ends. A client that disconnects first ends the loop at once.
 * Waits for the socket to drain when it is full, so a slow client only holds a cursor.
 */
export function streamAgUiEvents(response: ServerResponse, buffer: RunEventBuffer, started: AgUiEvent, translator: AgUiTranslator, options: AgUiStreamOptions): void {
  const controller = new AbortController();
  let hasEnded = false;
  response.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache, no-transform",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  const heartbeat = setInterval(() => {
    if (!response.writableEnded) response.write(": heartbeat\n\n");
  }, options.heartbeatMs ?? 15_000);
  heartbeat.unref();
  const onClose = (): void => {
    controller.abort();
    if (!hasEnded) options.onClientClosed();
  };
  response.on("close", onClose);
  // The client may have gone while the run was being created: its Stop counts all the same.
  if (response.destroyed) onClose();

  const writer = new SseBatchWriter(response);
  const write = async (text: string): Promise<void> => {
    if (writer.write(text) || controller.signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        response.off("drain", done);
        controller.signal.removeEventListener("abort", done);
        resolve();
      };
      response.on("drain", done);
      controller.signal.addEventListener("abort", done);
    });
  };

  const pump = async (): Promise<void> => {
    await write(formatAgUiFrame(started));
    for await (const event of followEvents(buffer, Math.max(options.afterSeq, buffer.firstSeq - 1), controller.signal)) {
      const translation = await translator.translate(event);
      if (controller.signal.aborted) return;
      if (translation.events.length > 0) await write(translation.events.map(formatAgUiFrame).join(""));
      if (translation.isFinal) {
        hasEnded = true;
        options.onFinished(translation.isInterrupt);
        writer.end();
        return;
      }
    }
  };
  pump()
    .catch((error: unknown) => {
      options.onError(error);
      writer.discard();
      response.destroy();
    })
    .finally(() => {
      clearInterval(heartbeat);
      response.off("close", onClose);
    });
}
