/**
 * The live endpoint's JSON frames (`GET /v1/threads/{id}/live`, notes/live-contract.md), as the
 * web app speaks them: what it sends, and what it accepts from the server. A frame the app does
 * not know (a newer server) is ignored, never a crash.
 */

/** The interruption options of a live session (snake_case, as on the wire). */
export interface InterruptionOptions {
  min_interruption_ms: number;
  min_interruption_words: number;
  false_interruption_timeout_ms: number;
  resume_false_interruption: boolean;
  interruptible: boolean;
}

/** Why a turn was interrupted. */
export type InterruptionReason = "user_speech" | "emergency_stop" | "false_interruption" | "stopped" | "disconnected";

/** A frame the server sends. */
export type ServerFrame =
  | { type: "session.ready"; thread_id: string; interruption: InterruptionOptions; playback_acks: boolean }
  | { type: "session.updated"; interruption: InterruptionOptions; playback_acks: boolean }
  | { type: "turn.started"; run_id: string; message_id: string; interruptible: boolean }
  | { type: "output.delta"; message_id: string; text: string }
  | { type: "output.paused" }
  | { type: "output.resumed" }
  | { type: "output.done"; message_id: string }
  | { type: "turn.interrupted"; run_id: string; message_id: string; heard_chars: number; reason: InterruptionReason }
  | { type: "message.published"; message_id: string; content: string; interrupted: boolean; state_version: number }
  | { type: "turn.ended"; run_id: string; status: string }
  | { type: "error"; error: string; message: string };

/** A frame the app sends. */
export type ClientFrame =
  | { type: "user.started_speaking" }
  | { type: "user.stopped_speaking"; transcript?: string }
  | { type: "playback"; message_id: string; played_chars: number }
  | { type: "emergency_stop" }
  | { type: "session.update"; interruption?: Partial<InterruptionOptions>; playback_acks?: boolean };

type FieldKind = "string" | "number" | "boolean" | "object";

/** The fields each known server frame must carry, with their JSON types. */
const REQUIRED_FIELDS: Record<ServerFrame["type"], Record<string, FieldKind>> = {
  "session.ready": { thread_id: "string", interruption: "object", playback_acks: "boolean" },
  "session.updated": { interruption: "object", playback_acks: "boolean" },
  "turn.started": { run_id: "string", message_id: "string", interruptible: "boolean" },
  "output.delta": { message_id: "string", text: "string" },
  "output.paused": {},
  "output.resumed": {},
  "output.done": { message_id: "string" },
  "turn.interrupted": { run_id: "string", message_id: "string", heard_chars: "number", reason: "string" },
  "message.published": { message_id: "string", content: "string", interrupted: "boolean", state_version: "number" },
  "turn.ended": { run_id: "string", status: "string" },
  error: { error: "string", message: "string" },
};

/** The server frame in `text`, or null for anything else (not JSON, an unknown type, a missing field). */
export function parseServerFrame(text: string): ServerFrame | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  const type = record.type;
  if (typeof type !== "string" || !Object.hasOwn(REQUIRED_FIELDS, type)) return null;
  const fields = REQUIRED_FIELDS[type as ServerFrame["type"]];
  for (const [name, kind] of Object.entries(fields)) {
    const field = record[name];
    if (kind === "object" ? typeof field !== "object" || field === null : typeof field !== kind) return null;
  }
  return record as unknown as ServerFrame;
}
