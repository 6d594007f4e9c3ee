/** A delta kept compactly: its frame is built when it is sent (message ids are shared strings). */
export interface DeltaEntry {
  messageId: string;
  text: string;
}

/** A ready SSE frame (every event but deltas), or a compact delta. */
export type BufferEntry = string | DeltaEntry;

/** Marks an entry that is a frame, not a delta, in {@link PackedEntries}' message index. */
const FRAME = 0xffff;

/**
 * A run of buffer entries, packed: the deltas' texts and the other events' frames joined into one
 * flat string, with a 4-byte end offset each and a 2-byte index into the deltas' few message ids
 * (or a mark for a frame). An unpacked delta costs an object, an array slot and a string of its
 * own (some 80 bytes besides its text, and most of a run's events are 1-word deltas), and a frame
 * is a rope of a dozen pieces as its template built it; packed, each costs 6 bytes besides its
 * text. At most 65,535 entries (a buffer packs 256 at a time).
 */
export class PackedEntries {
  readonly length: number;
  readonly #text: string;
  readonly #ends: Uint32Array;
  readonly #messageIndexes: Uint16Array;
  readonly #messageIds: readonly string[];

  private constructor(text: string, ends: Uint32Array, messageIndexes: Uint16Array, messageIds: string[]) {
    this.length = ends.length;
    this.#text = text;
    this.#ends = ends;
    this.#messageIndexes = messageIndexes;
    this.#messageIds = messageIds;
  }

  /** Packs `entries` (at most 65,535). */
  static pack(entries: readonly BufferEntry[]): PackedEntries {
    if (entries.length >= FRAME) throw new RangeError(`at most ${FRAME - 1} entries are packed together`);
    const ends = new Uint32Array(entries.length);
    const messageIndexes = new Uint16Array(entries.length);
    const messageIds: string[] = [];
    const indexOfMessage = new Map<string, number>();
    const texts: string[] = [];
    let end = 0;
    for (let index = 0; index < entries.length; index++) {
      const entry = entries[index]!;
      if (typeof entry === "string") {
        messageIndexes[index] = FRAME;
        texts.push(entry);
        end += entry.length;
      } else {
        let messageIndex = indexOfMessage.get(entry.messageId);
        if (messageIndex === undefined) {
          messageIndex = messageIds.push(entry.messageId) - 1;
          indexOfMessage.set(entry.messageId, messageIndex);
        }
        messageIndexes[index] = messageIndex;
        texts.push(entry.text);
        end += entry.text.length;
      }
      ends[index] = end;
    }
    // join builds one flat string: no rope of thousands of pieces, no slice holding a larger parent.
    return new PackedEntries(texts.join(""), ends, messageIndexes, messageIds);
  }

  /** The entry at `index`, rebuilt (a subscriber reads each entry about once). */
  at(index: number): BufferEntry | undefined {
    if (index < 0 || index >= this.length) return undefined;
    const text = this.#text.slice(index === 0 ? 0 : this.#ends[index - 1]!, this.#ends[index]!);
    const messageIndex = this.#messageIndexes[index]!;
    return messageIndex === FRAME ? text : { messageId: this.#messageIds[messageIndex]!, text };
  }
}
