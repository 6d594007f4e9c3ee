/**
 * The block structure of an answer: paragraphs, headings, fenced code, lists (nested by
 * indentation), quotes and rules. Partial text (an answer still streaming) parses too: an
 * unclosed code fence runs to the end. A small parser of our own on purpose: it yields plain
 * values that React renders as text, so an answer can never inject HTML.
 */
import { parseInline, type Inline } from "./parse-inline.js";

/** One block of an answer. */
export type Block =
  | { kind: "paragraph"; content: Inline[] }
  | { kind: "heading"; level: number; content: Inline[] }
  | { kind: "code"; language: string; text: string }
  | { kind: "list"; isOrdered: boolean; start: number; items: Block[][] }
  | { kind: "quote"; blocks: Block[] }
  | { kind: "rule" };

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const LIST_ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(\s+)(.*)$/;
const BLANK = /^\s*$/;

/** Parses an answer's text into blocks. */
export function parseMarkdown(text: string): Block[] {
  return parseLines(text.replace(/\r\n?/g, "\n").split("\n"));
}

function parseLines(lines: readonly string[]): Block[] {
  const blocks: Block[] = [];
  let index = 0;
  while (index < lines.length) {
    const line = lines[index]!;
    if (BLANK.test(line)) {
      index++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const marker = fence[1]!;
      const body: string[] = [];
      index++;
      while (index < lines.length && !lines[index]!.trimStart().startsWith(marker)) body.push(lines[index++]!);
      index++; // the closing fence (or past the end of a partial answer)
      blocks.push({ kind: "code", language: fence[2] ?? "", text: body.join("\n") });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      blocks.push({ kind: "heading", level: heading[1]!.length, content: parseInline(heading[2]!) });
      index++;
      continue;
    }
    if (RULE.test(line)) {
      blocks.push({ kind: "rule" });
      index++;
      continue;
    }
    if (QUOTE.test(line)) {
      const quoted: string[] = [];
      while (index < lines.length && QUOTE.test(lines[index]!)) quoted.push(QUOTE.exec(lines[index++]!)![1]!);
      blocks.push({ kind: "quote", blocks: parseLines(quoted) });
      continue;
    }
    if (LIST_ITEM.test(line)) {
      const list = parseList(lines, index);
      blocks.push(list.block);
      index = list.end;
      continue;
    }
    const paragraph: string[] = [];
    while (index < lines.length && !BLANK.test(lines[index]!) && !startsOtherBlock(lines[index]!)) paragraph.push(lines[index++]!.trim());
    blocks.push({ kind: "paragraph", content: parseInline(paragraph.join("\n")) });
  }
  return blocks;
}

function startsOtherBlock(line: string): boolean {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || LIST_ITEM.test(line);
}

/** A list from `start`: its items, each with the lines indented under it (nested lists included). */
function parseList(lines: readonly string[], start: number): { block: Block; end: number } {
  const first = LIST_ITEM.exec(lines[start]!)!;
  const isOrdered = /\d/.test(first[2]!);
  const items: Block[][] = [];
  let index = start;
  while (index < lines.length) {
    const match = LIST_ITEM.exec(lines[index]!);
    if (!match || /\d/.test(match[2]!) !== isOrdered) break;
    const contentIndent = match[1]!.length + match[2]!.length + match[3]!.length;
    const body = [match[4]!];
    index++;
    while (index < lines.length) {
      const next = lines[index]!;
      const indent = next.length - next.trimStart().length;
      if (BLANK.test(next)) {
        // A blank line ends the item unless what follows is still indented under it.
        const following = lines[index + 1];
        if (following === undefined || following.length - following.trimStart().length < Math.min(contentIndent, 2)) break;
        body.push("");
      } else if (indent >= Math.min(contentIndent, 2)) {
        body.push(next.slice(Math.min(indent, contentIndent)));
      } else if (!startsOtherBlock(next) && body.at(-1) !== "") {
        body.push(next.trim()); // a lazy continuation of the item's paragraph
      } else break;
      index++;
    }
    items.push(parseLines(body));
    while (index < lines.length && BLANK.test(lines[index]!) && LIST_ITEM.test(lines[index + 1] ?? "")) index++;
  }
  return { block: { kind: "list", isOrdered, start: isOrdered ? Number.parseInt(first[2]!, 10) : 1, items }, end: index };
}
