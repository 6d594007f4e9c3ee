import type { RunEvent } from "../core/index.js";

/** The SSE frame for one event: `id` is the run's seq, `event` its type, `data` one JSON line. */
export function formatSseFrame(event: RunEvent): string {
  // JSON.stringify never emits a raw newline, so one `data:` line is always enough.
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** An SSE comment line; clients ignore it, proxies and half-open detection see traffic. */
export function formatSseComment(text: string): string {
  return `: ${text}\n\n`;
}
