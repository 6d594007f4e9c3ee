/**
 * Where a Continue builds on. After a Stop it is the Stop's checkpoint; a fragment saved or
 * deleted after it, or a branch made from it, moves the thread's head without changing what is
 * to be continued, so the head stays a valid resume point. The server applies the same rule
 * when it tells the model that its previous answer was stopped (it walks back past those
 * checkpoints), so the client offers Continue exactly where the server can carry it out.
 */
import type { CheckpointView, HistoryMarker, MessageView } from "./wire-types.js";

/** The checkpoint a continuation builds on, with the version to send as `expected_state_version`. */
export interface ResumePoint {
  checkpointId: string;
  stateVersion: number;
}

/** Checkpoints that leave what a Continue continues as it was. */
const TRANSPARENT_KINDS: readonly CheckpointView["kind"][] = ["fragment_saved", "message_deleted", "fork_created"];

/** A resume point moved by this session's own transition (a fragment saved or deleted right on it). */
export function followResumePoint(point: ResumePoint | null, stateVersion: number, checkpointId: string): ResumePoint | null {
  return point !== null && point.stateVersion === stateVersion - 1 ? { checkpointId, stateVersion } : point;
}

/** What a reload knows: the thread's head, its history and markers, and the resume point it had. */
export interface ReloadedThread {
  headCheckpointId: string | null;
  stateVersion: number | null;
  history: readonly MessageView[];
  markers: readonly HistoryMarker[];
  resumePoint: ResumePoint | null;
}

/**
 * The resume point after a reload when history alone decides it: the one the session had, if it
 * is still the head; the last Stop's, if its checkpoint is the head; `null` when the head is a
 * message (an answer or a request came after the Stop). `undefined`: history cannot tell (the head
 * is a saved fragment, a deletion or a branch point), so read the checkpoints
 * ({@link resumePointFromCheckpoints}).
 */
export function resumePointFromHistory(thread: ReloadedThread): ResumePoint | null | undefined {
  const { headCheckpointId: head, stateVersion } = thread;
  if (head === null || stateVersion === null) return null;
  if (thread.resumePoint?.checkpointId === head) return thread.resumePoint;
  const interrupted = thread.markers.filter((marker) => marker.type === "interrupted_response");
  const last = interrupted.at(-1);
  if (last === undefined) return null;
  if (last.checkpoint_id === head) return { checkpointId: head, stateVersion: last.state_version };
  const isPublishedHead = thread.history.some((message) => message.checkpoint_id === head && message.publication_status === "published");
  return isPublishedHead ? null : undefined;
}

/** Walks back from the head past fragments, deletions and branch points: a Stop that caught a step there is continuable from the head. */
export function resumePointFromCheckpoints(checkpoints: readonly CheckpointView[], headCheckpointId: string, stateVersion: number): ResumePoint | null {
  const byId = new Map(checkpoints.map((checkpoint) => [checkpoint.checkpoint_id, checkpoint]));
  let checkpoint = byId.get(headCheckpointId);
  while (checkpoint && TRANSPARENT_KINDS.includes(checkpoint.kind) && checkpoint.parent_checkpoint_id !== null) {
    checkpoint = byId.get(checkpoint.parent_checkpoint_id);
  }
  const isInterruptedStop = checkpoint?.kind === "cancel_accepted" && checkpoint.pending_step !== null;
  return isInterruptedStop ? { checkpointId: headCheckpointId, stateVersion } : null;
}
