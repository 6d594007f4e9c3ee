/**
 * Values from tools and the operation ledger, said for people: `body_preview` → "Body preview",
 * `send_email` → "Send email", an epoch-millisecond `sent_at` or an ISO time → the local time.
 */

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
/** Epoch milliseconds between 2001 and 2286: a number named like a time in that range is a time. */
const EPOCH_MS = { min: 1e12, max: 1e13 };
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;
const TIME_KEY = /(^|_)(at|time|date|timestamp)$|At$/;

/** "body_preview" → "Body preview", "sentAt" → "Sent at". */
export function humanLabel(name: string): string {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .trim()
    .toLowerCase();
  return words.length === 0 ? name : words[0]!.toUpperCase() + words.slice(1);
}

/** A local time for `value` when it is one (an ISO string, or epoch milliseconds under a time-like key), else null. */
export function asTime(key: string, value: unknown): string | null {
  if (typeof value === "string" && ISO_TIME.test(value)) return timeFormat.format(new Date(value));
  if (typeof value === "number" && TIME_KEY.test(key) && value >= EPOCH_MS.min && value < EPOCH_MS.max) return timeFormat.format(new Date(value));
  return null;
}

/** A readable text for a scalar, or null for a value that needs a nested list. */
export function scalarText(key: string, value: unknown): string | null {
  if (value === null || value === undefined) return "—";
  const time = asTime(key, value);
  if (time !== null) return time;
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "string" || typeof value === "number" || typeof value === "bigint") return String(value);
  if (Array.isArray(value) && value.every((item) => typeof item !== "object" || item === null)) return value.join(", ");
  return null;
}

/** A tool's result or preview as stored (a JSON string in a tool message): parsed when it is JSON. */
export function parseJsonText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
