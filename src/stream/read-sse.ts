import { createParser, type EventSourceMessage } from "eventsource-parser";

/** One parsed SSE message. */
export type SseMessage = EventSourceMessage;

/**
 * Reads an SSE response body as parsed messages (comments skipped). Works wherever `fetch`
 * does; used by tests, the benchmarks and clients.
 */
export async function* readSseEvents(
  body: ReadableStream<Uint8Array>,
  options: { signal?: AbortSignal; onComment?: (comment: string) => void } = {},
): AsyncGenerator<SseMessage> {
  const queue: SseMessage[] = [];
  const parser = createParser({
    onEvent: (message) => queue.push(message),
    onComment: options.onComment,
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  const onAbort = (): void => void reader.cancel().catch(() => undefined);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      for (const message of queue.splice(0)) yield message;
    }
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    reader.releaseLock();
  }
}
