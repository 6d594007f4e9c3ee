/** A finished run's entries, packed: the same entries back, by position. */
import { describe, expect, it } from "vitest";
import { PackedEntries, type BufferEntry } from "./packed-entries.js";

describe("PackedEntries", () => {
  it("gives back every entry as it was appended, frames and deltas alike", () => {
    const entries: BufferEntry[] = [
      "id: 1\nevent: run.started\ndata: {}\n\n",
      { messageId: "msg_a", text: "Hello" },
      { messageId: "msg_a", text: "" },
      { messageId: "msg_a", text: ' quote " and \n newline, ünïcødé 🌊' },
      "id: 5\nevent: message.completed\ndata: {}\n\n",
      { messageId: "msg_b", text: "second message" },
      "id: 7\nevent: run.completed\ndata: {}\n\n",
    ];

    const packed = PackedEntries.pack(entries);

    expect(packed.length).toBe(entries.length);
    expect(entries.map((_, index) => packed.at(index))).toEqual(entries);
    expect(packed.at(-1)).toBeUndefined();
    expect(packed.at(entries.length)).toBeUndefined();
  });

  it("packs an empty buffer", () => {
    const packed = PackedEntries.pack([]);

    expect(packed.length).toBe(0);
    expect(packed.at(0)).toBeUndefined();
  });

  it("refuses more entries than a 2-byte message index can tell from a frame", () => {
    const entries: BufferEntry[] = Array.from({ length: 0xffff }, (_, index) => ({ messageId: `msg_${index}`, text: "x" }));

    expect(PackedEntries.pack(entries.slice(0, 0xfffe)).at(0xfffd)).toEqual({ messageId: "msg_65533", text: "x" });
    expect(() => PackedEntries.pack(entries)).toThrow(RangeError);
  });
});
