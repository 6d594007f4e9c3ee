import { consumeSse, type ParsedEvent } from "./consume-sse.js";

/** A run's SSE stream as the bench client reads it, with the time each event type first arrived. */
export interface RunStream {
  /** `message.delta` events so far. */
  readonly deltas: number;
  /** The type of the last event (the terminal one once the stream ended normally). */
  readonly lastType: string | undefined;
  /** The last event as received (the terminal one once the stream ended normally). */
  readonly lastEvent: Record<string, unknown> | undefined;
  /** Absolute time (`absoluteNow()`) each event type first arrived. */
  readonly arrivals: ReadonlyMap<string, number>;
  /** Resolves once `count` deltas arrived; rejects if the stream ends first. */
  untilDeltas(count: number): Promise<void>;
  /** Resolves when the server ended the stream (after the terminal event). */
  readonly ended: Promise<void>;
  close(): void;
}

/** Opens `GET …/events` and reads it in the background with {@link consumeSse}. */
export function openRunStream(url: string): RunStream {
  const controller = new AbortController();
  const arrivals = new Map<string, number>();
  const waiters: { count: number; resolve(): void }[] = [];
  const state = { deltas: 0, lastType: undefined as string | undefined, lastEvent: undefined as ParsedEvent | undefined };
  const onEvent = (event: ParsedEvent, arrivedAt: number) => {
    const { type } = event;
    if (!arrivals.has(type)) arrivals.set(type, arrivedAt);
    state.lastType = type;
    state.lastEvent = event;
    if (type === "message.delta") {
      state.deltas++;
      for (let index = waiters.length - 1; index >= 0; index--) {
        if (waiters[index]!.count <= state.deltas) waiters.splice(index, 1)[0]!.resolve();
      }
    }
  };
  const ended = consumeSse(url, { signal: controller.signal, onEvent }).then((consumption) => {
    if (consumption.status !== 200) throw new Error(`GET ${url} answered ${consumption.status}`);
  });
  // Whoever waits sees a failure; an unobserved one is not an unhandled rejection.
  ended.catch(() => undefined);
  return {
    get deltas() {
      return state.deltas;
    },
    get lastType() {
      return state.lastType;
    },
    get lastEvent() {
      return state.lastEvent;
    },
    arrivals,
    untilDeltas(count) {
      if (state.deltas >= count) return Promise.resolve();
      const reached = new Promise<void>((resolve) => waiters.push({ count, resolve }));
      const endedFirst = ended.then(() => {
        throw new Error(`the stream ended after ${state.deltas} deltas (last ${state.lastType})`);
      });
      return Promise.race([reached, endedFirst]);
    },
    ended,
    close: () => controller.abort(),
  };
}
