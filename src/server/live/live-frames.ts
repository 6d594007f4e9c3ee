import { z } from "zod";
import { checkJsonBody } from "../check-json-body.js";

/** The largest frame a live session reads; a bigger one gets `frame_too_large` (DESIGN §12). */
export const MAX_FRAME_BYTES = 64 * 1024;

const InterruptionUpdate = z.object({
  min_interruption_ms: z.number().int().min(0).max(60_000).optional(),
  min_interruption_words: z.number().int().min(0).max(1_000).optional(),
  false_interruption_timeout_ms: z.number().int().min(0).max(600_000).optional(),
  resume_false_interruption: z.boolean().optional(),
  interruptible: z.boolean().optional(),
});

/** What a live client may send. */
export const ClientFrame = z.discriminatedUnion("type", [
  z.object({ type: z.literal("user.started_speaking") }),
  z.object({ type: z.literal("user.stopped_speaking"), transcript: z.string().max(16_000).optional() }),
  z.object({ type: z.literal("playback"), message_id: z.string().min(1).max(200), played_chars: z.number().int().min(0) }),
  z.object({ type: z.literal("emergency_stop") }),
  z.object({ type: z.literal("session.update"), interruption: InterruptionUpdate.optional(), playback_acks: z.boolean().optional() }),
]);
export type ClientFrame = z.infer<typeof ClientFrame>;
export type InterruptionUpdate = z.infer<typeof InterruptionUpdate>;

/** A frame the session could not take: its `error` frame's code and message. */
export interface FrameProblem {
  error: "invalid_frame" | "frame_too_large" | "invalid_request";
  message: string;
}

/** Reads one frame, or says what is wrong with it (never throws). */
export function parseClientFrame(data: Buffer, isBinary: boolean): { frame: ClientFrame } | { problem: FrameProblem } {
  if (isBinary) return { problem: { error: "invalid_frame", message: "Send JSON text frames, not binary ones." } };
  if (data.length > MAX_FRAME_BYTES) return { problem: { error: "frame_too_large", message: `A frame may hold at most ${MAX_FRAME_BYTES} bytes.` } };
  let value: unknown;
  try {
    value = JSON.parse(data.toString("utf8"));
  } catch {
    return { problem: { error: "invalid_frame", message: "The frame is not valid JSON." } };
  }
  // What the HTTP edge refuses in any body (a NUL, nesting past 64 levels), refused here alike.
  const unstorable = checkJsonBody(value);
  if (unstorable) return { problem: { error: "invalid_request", message: `The frame is not valid: ${unstorable.path || "frame"}: ${unstorable.message}.` } };
  const parsed = ClientFrame.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join(".") || "frame";
    return { problem: { error: "invalid_frame", message: `The frame is not valid: ${where}: ${issue?.message ?? "unknown"}.` } };
  }
  return { frame: parsed.data };
}
