import { createHash } from "node:crypto";

/** A short, stable hash of a JSON-able value (request and step input identity). */
export function hashJson(value: unknown): string {
  return createHash("sha256").update(stableStringify(value)).digest("base64url").slice(0, 22);
}

/** JSON text that does not depend on key order (`undefined` fields are left out). */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** The prefix of a reduced operation's key: `sha256:` and the key's hash, never a key a tool names. */
export const HASHED_KEY_PREFIX = "sha256:";

/**
 * What an operation past its retention keeps of its idempotency key: enough to recognise a retry
 * of the same business action, not the key's text (which may name a customer or a document).
 */
export function hashIdempotencyKey(key: string): string {
  return `${HASHED_KEY_PREFIX}${createHash("sha256").update(key).digest("hex")}`;
}
