import { isTerminalEventType, type RunEvent, type RunEventDraft } from "../core/index.js";
import { formatSseFrame } from "./sse-frame.js";

/**
 * One run's event log for reconnecting clients: gapless `seq`, each event serialised once into
 * its SSE frame and shared by every subscriber. Short-lived and never read by resume: history is
 * the truth, this buffer only a convenience.
 */
export class RunEventBuffer {
  readonly runId: string;
  /** The seq of the first event this buffer holds. */
  readonly firstSeq: number;
  readonly #frames: string[] = [];
  readonly #types: string[] = [];
  readonly #listeners = new Set<() => void>();
  #terminal: RunEvent | undefined;
  readonly #terminalWaiters: ((event: RunEvent) => void)[] = [];

  constructor(runId: string, firstSeq = 1) {
    this.runId = runId;
    this.firstSeq = firstSeq;
  }

  /** The seq of the last event appended (firstSeq − 1 when empty). */
  get lastSeq(): number {
    return this.firstSeq + this.#frames.length - 1;
  }

  get isEmpty(): boolean {
    return this.#frames.length === 0;
  }

  /** The terminal event, once appended. */
  get terminalEvent(): RunEvent | undefined {
    return this.#terminal;
  }

  /** Stamps the next seq on `draft`, stores its frame and wakes subscribers. */
  append(draft: RunEventDraft): RunEvent {
    if (this.#terminal) throw new Error(`run ${this.runId} already ended with ${this.#terminal.type}`);
    const event = { ...draft, seq: this.lastSeq + 1 } as RunEvent;
    this.#frames.push(formatSseFrame(event));
    this.#types.push(event.type);
    if (isTerminalEventType(event.type)) {
      this.#terminal = event;
      for (const resolve of this.#terminalWaiters.splice(0)) resolve(event);
    }
    for (const listener of this.#listeners) listener();
    return event;
  }

  /** Frames with seq in (afterSeq, afterSeq + limit], joined, and the seq of the last one. */
  framesAfter(afterSeq: number, limit = Number.POSITIVE_INFINITY): { text: string; lastSeq: number; count: number } {
    const start = Math.max(0, afterSeq + 1 - this.firstSeq);
    const end = Math.min(this.#frames.length, start + limit);
    if (start >= end) return { text: "", lastSeq: Math.max(afterSeq, this.firstSeq - 1), count: 0 };
    return { text: this.#frames.slice(start, end).join(""), lastSeq: this.firstSeq + end - 1, count: end - start };
  }

  /** The events with seq in (afterSeq, upToSeq], parsed back from their frames. */
  eventsBetween(afterSeq: number, upToSeq: number): RunEvent[] {
    const start = Math.max(0, afterSeq + 1 - this.firstSeq);
    const end = Math.min(this.#frames.length, upToSeq + 1 - this.firstSeq);
    const events: RunEvent[] = [];
    for (let index = start; index < end; index++) {
      const frame = this.#frames[index]!;
      events.push(JSON.parse(frame.slice(frame.indexOf("\ndata: ") + 7, -2)) as RunEvent);
    }
    return events;
  }

  /** The type of the event with `seq`, if held. */
  typeAt(seq: number): string | undefined {
    return this.#types[seq - this.firstSeq];
  }

  /** Calls `listener` after every append; returns the unsubscribe function. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get subscriberCount(): number {
    return this.#listeners.size;
  }

  /** Resolves with the terminal event (at once if the run has ended). */
  whenTerminal(): Promise<RunEvent> {
    if (this.#terminal) return Promise.resolve(this.#terminal);
    return new Promise((resolve) => this.#terminalWaiters.push(resolve));
  }
}
