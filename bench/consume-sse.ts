import { readSseEvents } from "../src/stream/index.js";
import { absoluteNow } from "./absolute-clock.js";

/** What one SSE response delivered to the client. */
export interface SseConsumption {
  /** HTTP status of the response (the body is not read unless it is 200). */
  status: number;
  events: number;
  deltas: number;
  /** `performance.now()` when the first `message.delta` was parsed. */
  firstDeltaAt: number | undefined;
  /** `performance.now()` when the stream ended. */
  endedAt: number;
  /** The type of the last event (the terminal one, for a stream that ended normally). */
  lastType: string | undefined;
}

/** An event as parsed from one SSE `data` field. */
export type ParsedEvent = { type: string } & Record<string, unknown>;

export interface ConsumeSseOptions {
  signal?: AbortSignal;
  headers?: Record<string, string>;
  onDelta?: (deltas: number) => void;
  /** Every event, with the absolute time ({@link absoluteNow}) its message arrived, taken before parsing. */
  onEvent?: (event: ParsedEvent, arrivedAt: number) => void;
}

/**
 * The client side that every path in the benchmarks shares: `fetch` + `readSseEvents` + one
 * `JSON.parse` per `data` field, counting `message.delta` events until the server ends the stream.
 */
export async function consumeSse(url: string, options: ConsumeSseOptions = {}): Promise<SseConsumption> {
  const response = await fetch(url, { headers: { accept: "text/event-stream", ...options.headers }, signal: options.signal });
  const consumption: SseConsumption = {
    status: response.status,
    events: 0,
    deltas: 0,
    firstDeltaAt: undefined,
    endedAt: 0,
    lastType: undefined,
  };
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    consumption.endedAt = performance.now();
    return consumption;
  }
  for await (const message of readSseEvents(response.body, { signal: options.signal })) {
    // Only readers that ask for arrival times pay for the clock read.
    const arrivedAt = options.onEvent ? absoluteNow() : Number.NaN;
    const event = JSON.parse(message.data) as ParsedEvent;
    options.onEvent?.(event, arrivedAt);
    consumption.events++;
    consumption.lastType = event.type;
    if (event.type === "message.delta") {
      consumption.deltas++;
      consumption.firstDeltaAt ??= performance.now();
      options.onDelta?.(consumption.deltas);
    }
  }
  consumption.endedAt = performance.now();
  return consumption;
}
