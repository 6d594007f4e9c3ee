/**
 * Text as every store can keep it. PostgreSQL's `text` cannot hold U+0000, so text that did not
 * come through the HTTP edge (which refuses it) has each NUL replaced with U+FFFD, on every store
 * alike, before anyone sees it: what a client was shown is exactly what is kept.
 */
export function storableText(text: string): string {
  // The check first: this sits on the per-token path, and NULs are rare.
  return text.includes("\u0000") ? text.replaceAll("\u0000", "\uFFFD") : text;
}
