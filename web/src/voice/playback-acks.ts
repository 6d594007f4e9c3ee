/**
 * The arithmetic of playback acks: how many characters of an agent message the user has heard
 * (or, in the visible text mode, been shown), counted in the message's text as the server sent
 * it. An ack only grows and never passes what was received; the server clamps again on its side.
 * Pure functions, so that the players stay thin and the counting is tested as a table.
 */

/** The ack to keep after `played` was reported: never smaller than `previous`, never past `receivedLength`. */
export function nextAck(previous: number, played: number, receivedLength: number): number {
  const bounded = Math.min(Math.max(0, Math.floor(played)), receivedLength);
  return Math.max(previous, bounded);
}

/**
 * Where the next word after `from` ends (whitespace before it included): the next step of the
 * visible text mode. A word at the very end of text still arriving may be cut mid-word, so it
 * counts only once the text is complete; `from` is returned while there is no whole word to show.
 */
export function nextWordEnd(text: string, from: number, isComplete: boolean): number {
  let index = from;
  while (index < text.length && /\s/.test(text[index]!)) index++;
  if (index >= text.length) return isComplete ? text.length : from;
  while (index < text.length && !/\s/.test(text[index]!)) index++;
  if (index < text.length || isComplete) return index;
  return from;
}

/** How long the visible text mode shows `chars` new characters before the next step, at `charsPerSecond`. */
export function revealDelayMs(chars: number, charsPerSecond: number): number {
  return Math.round((Math.max(0, chars) * 1000) / charsPerSecond);
}

/** A stretch of a message's text handed to the speech synthesizer as one utterance. */
export interface SpeechSegment {
  start: number;
  end: number;
}

/** Past this many characters without a sentence end, an utterance is cut at a space instead of waiting. */
export const MAX_SEGMENT_CHARS = 240;

const SENTENCE_END = /[.!?…:;](?=\s)|\n/g;

/**
 * The next stretch to speak after `spokenUpTo`: up to the last sentence end received (speaking
 * whole sentences sounds natural), up to a space when a long run has none, and the rest once the
 * message is complete. Null while there is nothing worth speaking yet.
 */
export function nextSpeechSegment(text: string, spokenUpTo: number, isComplete: boolean): SpeechSegment | null {
  const rest = text.slice(spokenUpTo);
  // Only whitespace left: nothing to say (a complete message is then acked to its end by the player).
  if (rest.trim() === "") return null;
  if (isComplete) return { start: spokenUpTo, end: text.length };
  let end = -1;
  for (const match of rest.matchAll(SENTENCE_END)) end = match.index + match[0].length;
  if (end < 0 && rest.length > MAX_SEGMENT_CHARS) {
    const space = rest.lastIndexOf(" ", MAX_SEGMENT_CHARS);
    end = space > 0 ? space : MAX_SEGMENT_CHARS;
  }
  if (end <= 0 || rest.slice(0, end).trim() === "") return null;
  return { start: spokenUpTo, end: spokenUpTo + end };
}

/**
 * The ack for a speech `boundary` event at `charIndex` of a segment's utterance: the words before
 * the one now starting have been spoken.
 */
export function boundaryAck(segment: SpeechSegment, charIndex: number): number {
  return Math.min(segment.start + Math.max(0, charIndex), segment.end);
}

/** The parts of a message after an interruption: what was heard and what was discarded unheard. */
export function splitHeard(text: string, heardChars: number): { heard: string; discarded: string } {
  const at = Math.min(Math.max(0, heardChars), text.length);
  return { heard: text.slice(0, at), discarded: text.slice(at) };
}
