/** The voice mode's playback arithmetic (web/src/voice/playback-acks.ts): acks, reveal steps, speech segments, heard vs discarded. */
import { describe, expect, it } from "vitest";
import { boundaryAck, MAX_SEGMENT_CHARS, nextAck, nextSpeechSegment, nextWordEnd, revealDelayMs, splitHeard } from "../web/src/voice/playback-acks.js";

describe("the voice mode's playback acks", () => {
  it.each([
    // previous, played, received → kept
    [0, 5, 10, 5],
    [5, 3, 10, 5], // never smaller than before
    [5, 25, 10, 10], // never past what was received
    [0, -4, 10, 0],
    [2, 7.9, 10, 7], // whole characters only
    [0, 0, 0, 0],
  ])("nextAck(%i, %d, %i) = %i", (previous, played, received, expected) => {
    expect(nextAck(previous, played, received)).toBe(expected);
  });

  it.each([
    // text, from, complete → end
    ["The tide turns", 0, false, 3],
    ["The tide turns", 3, false, 8], // the space before a word goes with it
    ["The tide turns", 8, false, 8], // "turns" may still be arriving: wait
    ["The tide turns", 8, true, 14],
    ["The tide turns ", 8, false, 14], // a space after it says it is whole
    ["The tide turns  ", 14, false, 14], // only whitespace left, more may come
    ["The tide turns  ", 14, true, 16], // complete: the trailing whitespace is shown (and acked) too
    ["", 0, true, 0],
    ["  \n", 0, true, 3],
    ["Ebb", 0, false, 0],
  ])("nextWordEnd(%j, %i, %s) = %i", (text, from, isComplete, expected) => {
    expect(nextWordEnd(text, from, isComplete)).toBe(expected);
  });

  it("reveals at a reading pace", () => {
    expect(revealDelayMs(5, 25)).toBe(200);
    expect(revealDelayMs(0, 25)).toBe(0);
    expect(revealDelayMs(-3, 25)).toBe(0);
  });

  it("speaks whole sentences as they arrive, and the rest once the message is complete", () => {
    const text = "The moon pulls the sea. The earth turns beneath it! And so";
    const lastEnd = text.indexOf("!") + 1;
    // Up to "it!", the last sentence end received.
    expect(nextSpeechSegment(text, 0, false)).toEqual({ start: 0, end: lastEnd });
    expect(nextSpeechSegment(text, lastEnd, false)).toBeNull(); // " And so" has no end yet
    expect(nextSpeechSegment(text, lastEnd, true)).toEqual({ start: lastEnd, end: text.length });
    expect(nextSpeechSegment("Half a sente", 0, false)).toBeNull();
    expect(nextSpeechSegment("Tides.   ", 6, true)).toBeNull(); // nothing but whitespace left to say
    expect(nextSpeechSegment("", 0, true)).toBeNull();
    expect(nextSpeechSegment("One line\nnext", 0, false)).toEqual({ start: 0, end: 9 });
  });

  it("cuts a long run without a sentence end at a space instead of waiting for it", () => {
    const text = `${"word ".repeat(60)}and more`;
    const segment = nextSpeechSegment(text, 0, false)!;
    expect(segment.end).toBeLessThanOrEqual(MAX_SEGMENT_CHARS);
    expect(text[segment.end]).toBe(" ");
    expect(segment.end).toBeGreaterThan(MAX_SEGMENT_CHARS - 6);
  });

  it("acks a word boundary as the words before it, counted in the message", () => {
    const segment = { start: 24, end: 51 };
    expect(boundaryAck(segment, 0)).toBe(24);
    expect(boundaryAck(segment, 10)).toBe(34);
    expect(boundaryAck(segment, 400)).toBe(51); // a charIndex past the utterance is clamped to it
  });

  it("splits an interrupted message into the heard prefix and the discarded rest", () => {
    expect(splitHeard("The tide turns because", 8)).toEqual({ heard: "The tide", discarded: " turns because" });
    expect(splitHeard("Tide", 10)).toEqual({ heard: "Tide", discarded: "" });
    expect(splitHeard("Tide", -1)).toEqual({ heard: "", discarded: "Tide" });
  });
});
