/**
 * The thread list's `next_cursor`: the position after a page's last thread (its `updated_at` and
 * id), base64url-encoded JSON. Opaque to clients: they hand it back as `before`, nothing more.
 * It carries no tenant: the listing is scoped by the API key, so a cursor is only a position.
 */
import type { ThreadRecord } from "../core/index.js";
import type { ThreadListPosition } from "../store/index.js";

/** Longer than any cursor this API makes (a safe integer and an id of up to 100 characters, in UTF-8). */
const MAX_THREAD_CURSOR_LENGTH = 1_024;

/** The cursor that continues a listing after `thread`. */
export function encodeThreadCursor(thread: Pick<ThreadRecord, "updatedAt" | "threadId">): string {
  return Buffer.from(JSON.stringify([thread.updatedAt, thread.threadId]), "utf8").toString("base64url");
}

/** The position a cursor names, or undefined when the text is not a cursor this API made. */
export function decodeThreadCursor(cursor: string): ThreadListPosition | undefined {
  if (cursor.length > MAX_THREAD_CURSOR_LENGTH || !/^[A-Za-z0-9_-]+$/.test(cursor)) return undefined;
  const bytes = Buffer.from(cursor, "base64url");
  // Only the canonical encoding: no trailing bits, no bytes that are not UTF-8.
  if (bytes.toString("base64url") !== cursor) return undefined;
  const text = bytes.toString("utf8");
  if (!Buffer.from(text, "utf8").equals(bytes)) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 2) return undefined;
  const [updatedAt, threadId] = value as [unknown, unknown];
  if (typeof updatedAt !== "number" || !Number.isSafeInteger(updatedAt) || updatedAt < 0) return undefined;
  // No control characters (PostgreSQL text cannot hold NUL), and no longer than a thread id may be.
  if (typeof threadId !== "string" || threadId.length === 0 || threadId.length > 100 || /\p{Cc}/u.test(threadId)) {
    return undefined;
  }
  return { updatedAt, threadId };
}
