import { isTerminalEventType, type RunEvent } from "../core/index.js";
import type { RunEventBuffer } from "./run-event-buffer.js";

/**
 * A run's events after `afterSeq`, as they are appended, up to and including the terminal one;
 * it ends early when `signal` aborts. An attempt's successor buffer is followed from its start.
 */
export async function* followEvents(buffer: RunEventBuffer, afterSeq: number, signal: AbortSignal): AsyncGenerator<RunEvent> {
  let current = buffer;
  let seq = afterSeq;
  // Set by every append (or the abort), so one that lands between a read and the wait is not missed.
  let isDirty = false;
  let wake: (() => void) | undefined;
  const onChange = (): void => {
    isDirty = true;
    wake?.();
  };
  signal.addEventListener("abort", onChange);
  let unsubscribe = current.subscribe(onChange);
  try {
    while (!signal.aborted) {
      isDirty = false;
      const events = current.eventsBetween(seq, current.lastSeq);
      for (const event of events) {
        seq = event.seq;
        yield event;
        if (isTerminalEventType(event.type)) return;
      }
      if (events.length > 0) continue;
      const successor = current.successor;
      if (successor) {
        unsubscribe();
        current = successor;
        seq = successor.firstSeq - 1;
        unsubscribe = current.subscribe(onChange);
        continue;
      }
      if (!isDirty) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    unsubscribe();
    signal.removeEventListener("abort", onChange);
  }
}
