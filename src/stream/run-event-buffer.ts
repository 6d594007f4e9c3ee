import { InvariantError, isTerminalEventType, type RunEvent, type RunEventDraft } from "../core/index.js";
import { PackedEntries, type BufferEntry, type DeltaEntry } from "./packed-entries.js";
import { formatDeltaFrame, formatSseFrame } from "./sse-frame.js";

/** Entries packed together once this many are appended (and the rest at the terminal event). */
const SEGMENT_ENTRIES = 256;

/**
 * One run's event log for reconnecting clients: gapless `seq`, shared by every subscriber.
 * Deltas, which are most of a run's events, are kept as their text only and framed on send, so
 * a buffer kept for its TTL costs about the text streamed, not a full frame per token. Every
 * other event is serialised once, at append. Every {@link SEGMENT_ENTRIES} entries are packed
 * ({@link PackedEntries}), and the last ones at the terminal event, when the subscribers are let
 * go too: a long stream, and a buffer kept for its TTL for resumes with `Last-Event-ID`, cost
 * little more than their text. Short-lived and never read by resume: history is the truth, this
 * buffer only a convenience.
 */
export class RunEventBuffer {
  readonly runId: string;
  /** The seq of the first event this buffer holds. */
  readonly firstSeq: number;
  /** The entries packed so far: each holds SEGMENT_ENTRIES of them, but the last after the end. */
  readonly #segments: PackedEntries[] = [];
  /** How many entries the segments hold. */
  #packedCount = 0;
  /** The entries appended since the last segment was packed. */
  #tail: BufferEntry[] = [];
  readonly #listeners = new Set<() => void>();
  #terminal: RunEvent | undefined;
  #successor: RunEventBuffer | undefined;
  readonly #terminalWaiters: ((event: RunEvent) => void)[] = [];
  readonly #onTerminal: ((buffer: RunEventBuffer) => void) | undefined;

  /** `onTerminal` is called once, right after the terminal event is appended (the hub starts the TTL). */
  constructor(runId: string, firstSeq = 1, onTerminal?: (buffer: RunEventBuffer) => void) {
    this.runId = runId;
    this.firstSeq = firstSeq;
    this.#onTerminal = onTerminal;
  }

  /** The seq of the last event appended (firstSeq − 1 when empty). */
  get lastSeq(): number {
    return this.firstSeq + this.#length - 1;
  }

  get isEmpty(): boolean {
    return this.#length === 0;
  }

  get #length(): number {
    return this.#packedCount + this.#tail.length;
  }

  #entryAt(index: number): BufferEntry | undefined {
    const segment = Math.floor(index / SEGMENT_ENTRIES);
    if (segment < this.#segments.length) return this.#segments[segment]!.at(index - segment * SEGMENT_ENTRIES);
    return this.#tail[index - this.#packedCount];
  }

  /** The terminal event, once appended. */
  get terminalEvent(): RunEvent | undefined {
    return this.#terminal;
  }

  /** Stamps the next seq on `draft`, stores it and wakes subscribers. */
  append(draft: RunEventDraft): RunEvent {
    if (this.#terminal) throw new InvariantError(`run ${this.runId} already ended with ${this.#terminal.type}`);
    const seq = this.lastSeq + 1;
    let event: RunEvent;
    if (draft.type === "message.delta" && draft.format === undefined) {
      // Most events: kept as their text, and built field by field (a spread of an unknown shape costs more per token).
      // A structured step's delta (`format: "json"`) is framed whole below: its mark must survive to a saved fragment.
      const entry = { messageId: draft.message_id, text: draft.text };
      this.#tail.push(entry);
      event = this.#deltaEvent(entry, seq);
    } else {
      event = { ...draft, seq } as RunEvent;
      this.#tail.push(formatSseFrame(event));
    }
    if (!isTerminalEventType(event.type)) {
      if (this.#tail.length === SEGMENT_ENTRIES) this.#packTail();
      for (const listener of this.#listeners) listener();
      return event;
    }
    this.#terminal = event;
    this.#packTail();
    for (const resolve of this.#terminalWaiters.splice(0)) resolve(event);
    this.#onTerminal?.(this);
    for (const listener of this.#listeners) listener();
    // Nothing is appended after the end, so no subscriber is woken again: none needs holding.
    this.#listeners.clear();
    return event;
  }

  /** Frames with seq in (afterSeq, afterSeq + limit], joined, and the seq of the last one. */
  framesAfter(afterSeq: number, limit = Number.POSITIVE_INFINITY): { text: string; lastSeq: number; count: number } {
    const start = Math.max(0, afterSeq + 1 - this.firstSeq);
    const end = Math.min(this.#length, start + limit);
    if (start >= end) return { text: "", lastSeq: Math.max(afterSeq, this.firstSeq - 1), count: 0 };
    let text = "";
    for (let index = start; index < end; index++) text += this.#frameAt(index);
    return { text, lastSeq: this.firstSeq + end - 1, count: end - start };
  }

  /** The events with seq in (afterSeq, upToSeq]. */
  eventsBetween(afterSeq: number, upToSeq: number): RunEvent[] {
    const start = Math.max(0, afterSeq + 1 - this.firstSeq);
    const end = Math.min(this.#length, upToSeq + 1 - this.firstSeq);
    const events: RunEvent[] = [];
    for (let index = start; index < end; index++) {
      const entry = this.#entryAt(index)!;
      if (typeof entry === "string") events.push(JSON.parse(entry.slice(entry.indexOf("\ndata: ") + 7, -2)) as RunEvent);
      else events.push(this.#deltaEvent(entry, this.firstSeq + index));
    }
    return events;
  }

  /** The type of the event with `seq`, if held. */
  typeAt(seq: number): string | undefined {
    const entry = this.#entryAt(seq - this.firstSeq);
    if (entry === undefined) return undefined;
    if (typeof entry !== "string") return "message.delta";
    return entry.slice(entry.indexOf("\nevent: ") + 8, entry.indexOf("\ndata: "));
  }

  #frameAt(index: number): string {
    const entry = this.#entryAt(index)!;
    return typeof entry === "string" ? entry : formatDeltaFrame(this.runId, entry.messageId, entry.text, this.firstSeq + index);
  }

  /** Packs the entries appended since the last segment. */
  #packTail(): void {
    this.#segments.push(PackedEntries.pack(this.#tail));
    this.#packedCount += this.#tail.length;
    this.#tail = [];
  }

  /** A delta's event, with the key order it was appended with (so its bytes never change). */
  #deltaEvent(entry: DeltaEntry, seq: number): RunEvent {
    return { type: "message.delta", run_id: this.runId, message_id: entry.messageId, text: entry.text, seq };
  }

  /** The next attempt's buffer, once the run was handed over or recovered without ending. */
  get successor(): RunEventBuffer | undefined {
    return this.#successor;
  }

  /** Marks `next` as this attempt's successor and wakes subscribers, so they move on to it. */
  supersede(next: RunEventBuffer): void {
    if (this.#terminal || this.#successor) return;
    this.#successor = next;
    for (const listener of this.#listeners) listener();
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
