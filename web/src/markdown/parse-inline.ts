/**
 * Markdown's inline syntax, the part answers use: `code`, **strong**, *emphasis* (also with `_`,
 * never inside a word such as send_email), [links](https://…), backslash escapes and line breaks.
 * The result is a tree of plain values: rendering it never parses HTML, so nothing in an answer
 * can become markup or script.
 */

/** One inline piece of a block. */
export type Inline =
  | { kind: "text"; text: string }
  | { kind: "code"; text: string }
  | { kind: "strong"; children: Inline[] }
  | { kind: "emphasis"; children: Inline[] }
  | { kind: "link"; href: string; children: Inline[] }
  | { kind: "break" };

/** Only these link targets are kept; any other (`javascript:`, `data:`…) stays plain text. */
const SAFE_LINK = /^(https?:\/\/|mailto:)[^\s]+$/i;
const ESCAPABLE = "\\`*_[]()#+-.!>~|";
const isWordCharacter = (character: string | undefined): boolean => character !== undefined && /[\p{L}\p{N}]/u.test(character);
const isSpace = (character: string | undefined): boolean => character === undefined || /\s/.test(character);

/** Parses `text` (one block's content; `\n` is a line break). */
export function parseInline(text: string): Inline[] {
  const output: Inline[] = [];
  let plain = "";
  const flush = (): void => {
    if (plain) output.push({ kind: "text", text: plain });
    plain = "";
  };
  let index = 0;
  while (index < text.length) {
    const character = text[index]!;
    if (character === "\\" && ESCAPABLE.includes(text[index + 1] ?? "")) {
      plain += text[index + 1];
      index += 2;
      continue;
    }
    if (character === "\n") {
      flush();
      output.push({ kind: "break" });
      index++;
      continue;
    }
    const span = matchSpan(text, index);
    if (span) {
      flush();
      output.push(span.inline);
      index = span.end;
      continue;
    }
    plain += character;
    index++;
  }
  flush();
  return output;
}

function matchSpan(text: string, start: number): { inline: Inline; end: number } | null {
  const character = text[start]!;
  if (character === "`") return matchCode(text, start);
  if (character === "[") return matchLink(text, start);
  if (character === "*" || character === "_") return matchEmphasis(text, start, character);
  return null;
}

function matchCode(text: string, start: number): { inline: Inline; end: number } | null {
  let ticks = 0;
  while (text[start + ticks] === "`") ticks++;
  const fence = "`".repeat(ticks);
  const close = text.indexOf(fence, start + ticks);
  if (close < 0) return null;
  const content = text.slice(start + ticks, close).replace(/\n/g, " ");
  const trimmed = content.length > 2 && content.startsWith(" ") && content.endsWith(" ") ? content.slice(1, -1) : content;
  return { inline: { kind: "code", text: trimmed }, end: close + ticks };
}

function matchLink(text: string, start: number): { inline: Inline; end: number } | null {
  const labelEnd = findClosing(text, start + 1, "[", "]");
  if (labelEnd < 0 || text[labelEnd + 1] !== "(") return null;
  const targetEnd = text.indexOf(")", labelEnd + 2);
  if (targetEnd < 0) return null;
  const href = text.slice(labelEnd + 2, targetEnd).trim();
  if (!SAFE_LINK.test(href)) return null;
  return { inline: { kind: "link", href, children: parseInline(text.slice(start + 1, labelEnd)) }, end: targetEnd + 1 };
}

function matchEmphasis(text: string, start: number, marker: "*" | "_"): { inline: Inline; end: number } | null {
  const isDouble = text[start + 1] === marker;
  const width = isDouble ? 2 : 1;
  const delimiter = marker.repeat(width);
  const after = text[start + width];
  // An opener is followed by a non-space; `_` never opens inside a word.
  if (isSpace(after) || (marker === "_" && isWordCharacter(text[start - 1]))) return null;
  for (let close = text.indexOf(delimiter, start + width + 1); close >= 0; close = text.indexOf(delimiter, close + 1)) {
    const before = text[close - 1];
    const next = text[close + width];
    if (isSpace(before) || (marker === "_" && isWordCharacter(next))) continue;
    // A single marker must not be half of a double one.
    if (!isDouble && next === marker) {
      close++;
      continue;
    }
    const children = parseInline(text.slice(start + width, close));
    return { inline: isDouble ? { kind: "strong", children } : { kind: "emphasis", children }, end: close + width };
  }
  return null;
}

/** The index of the bracket that closes the one before `from`, or -1. */
function findClosing(text: string, from: number, open: string, close: string): number {
  let depth = 0;
  for (let index = from; index < text.length; index++) {
    const character = text[index];
    if (character === "\\") index++;
    else if (character === open) depth++;
    else if (character === close) {
      if (depth === 0) return index;
      depth--;
    } else if (character === "\n" && text[index + 1] === "\n") return -1;
  }
  return -1;
}
