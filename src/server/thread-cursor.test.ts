/** The thread list's cursor: every position it encodes decodes back exactly, and nothing else decodes. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeThreadCursor, encodeThreadCursor } from "./thread-cursor.js";

/** A thread id as the store may hold one: 1–100 characters, no control characters. */
const threadIds = fc.string({ minLength: 1, maxLength: 100, unit: "grapheme" }).filter((id) => id.length <= 100 && !/\p{Cc}/u.test(id));

describe("thread cursor", () => {
  it("decodes every cursor it encodes to the same position", () => {
    fc.assert(
      fc.property(fc.maxSafeNat(), threadIds, (updatedAt, threadId) => {
        const cursor = encodeThreadCursor({ updatedAt, threadId });
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(decodeThreadCursor(cursor)).toEqual({ updatedAt, threadId });
      }),
    );
  });

  it("decodes a server-made id's cursor", () => {
    const position = { updatedAt: 1_700_000_000_123, threadId: "thr_01jd8x0f1ae2rbv7c9ks0d8m5q" };
    expect(decodeThreadCursor(encodeThreadCursor(position))).toEqual(position);
  });

  it("never throws, whatever the text", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 2_000 }), (text) => {
        const position = decodeThreadCursor(text);
        // Anything that decodes is a cursor this module would make for that position.
        if (position) expect(encodeThreadCursor(position)).toBe(text);
      }),
    );
  });
});
