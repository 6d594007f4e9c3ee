import type { RunEvent } from "../core/index.js";

/** The SSE frame for one event: `id` is the run's seq, `event` its type, `data` one JSON line. */
export function formatSseFrame(event: RunEvent): string {
  // JSON.stringify never emits a raw newline, so one `data:` line is always enough.
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * A `message.delta`'s frame, byte for byte what {@link formatSseFrame} gives for
 * `{ type, run_id, message_id, text, seq }` in that key order, without building the event: only
 * the text needs escaping, and this is the frame of nearly every event a run sends.
 */
export function formatDeltaFrame(runId: string, messageId: string, text: string, seq: number): string {
  return `id: ${seq}\nevent: message.delta\ndata: {"type":"message.delta","run_id":${JSON.stringify(runId)},"message_id":${JSON.stringify(messageId)},"text":${JSON.stringify(text)},"seq":${seq}}\n\n`;
}

/** An SSE comment line; clients ignore it, proxies and half-open detection see traffic. */
export function formatSseComment(text: string): string {
  return `: ${text}\n\n`;
}
