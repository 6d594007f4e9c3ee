/** Longest heuristic title, in characters (the ellipsis included). */
const TITLE_MAX = 60;

/** A heuristic title: the first message, whitespace collapsed, cut at a word boundary with an ellipsis when it is long. */
export function titleFromText(text: string): string {
  const collapsed = text.replace(/\s+/g, " ").trim();
  if (collapsed.length === 0) return "New thread";
  if (collapsed.length <= TITLE_MAX) return collapsed;
  const head = collapsed.slice(0, TITLE_MAX - 1);
  const boundary = head.lastIndexOf(" ");
  // A single word longer than the whole title is cut where it must be.
  return `${boundary > 0 ? head.slice(0, boundary) : head}…`;
}
