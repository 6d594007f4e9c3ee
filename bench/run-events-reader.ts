import { readSseEvents } from "../src/stream/index.js";

/**
 * How the Tidemark peer's client reads a run's SSE reply (and the relay's, which sends the same
 * frames): every event parsed, each `message.delta`'s text handed on. Returns the last event's type.
 */
export async function readRunEvents(body: ReadableStream<Uint8Array>, signal: AbortSignal, onText: (text: string) => void): Promise<string> {
  let lastType = "";
  for await (const message of readSseEvents(body, { signal })) {
    const event = JSON.parse(message.data) as { type: string; text?: string };
    lastType = event.type;
    if (event.type === "message.delta") onText(event.text ?? "");
  }
  return lastType;
}
