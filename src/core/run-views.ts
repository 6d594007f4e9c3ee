/**
 * Status-shaped views of a run: `RunRecord` is the store's flat row, whose status-specific fields
 * are null outside their status; these say which fields a status guarantees, so callers ask once
 * ("has a cancel been accepted?") instead of guessing field by field with `!` and `??`.
 */
import type { RunRecord } from "./records.js";
import type { FailureReason } from "./run-status.js";

/** A cancel the store accepted: why, when, and the checkpoint and version it was accepted at. */
export interface AcceptedCancelView {
  reason: string;
  requestedAt: number;
  stateVersion: number;
  checkpointId: string;
}

/** The run's accepted cancel; undefined when none was accepted (a cancel that came too late leaves none). */
export function acceptedCancelOf(run: RunRecord): AcceptedCancelView | undefined {
  const { cancelReason, cancelRequestedAt, cancelStateVersion, cancelCheckpointId } = run;
  if (cancelReason === null || cancelRequestedAt === null || cancelStateVersion === null || cancelCheckpointId === null) return undefined;
  return { reason: cancelReason, requestedAt: cancelRequestedAt, stateVersion: cancelStateVersion, checkpointId: cancelCheckpointId };
}

/** How a terminal run ended, by status. */
export type RunEnding =
  | { status: "completed"; stateVersion: number; publishedMessageId: string | null }
  | { status: "failed"; reason: FailureReason; message: string }
  /** `resumeCheckpointId` is null for a run that never started (no checkpoint was written for it). */
  | { status: "cancelled"; reason: string; resumeCheckpointId: string | null };

/** The run's ending; undefined while it is not terminal. */
export function endingOf(run: RunRecord): RunEnding | undefined {
  switch (run.status) {
    case "completed":
      return { status: "completed", stateVersion: run.stateVersion, publishedMessageId: run.publishedMessageId };
    case "failed":
      return { status: "failed", reason: run.failureReason ?? "error", message: run.failureMessage ?? "The run failed." };
    case "cancelled":
      return { status: "cancelled", reason: run.cancelReason ?? "cancelled", resumeCheckpointId: run.cancelCheckpointId };
    default:
      return undefined;
  }
}

/** Who holds the run's lease and until when; undefined when nobody does. */
export function leaseOf(run: RunRecord): { owner: string; expiresAt: number } | undefined {
  return run.leaseOwner === null || run.leaseExpiresAt === null ? undefined : { owner: run.leaseOwner, expiresAt: run.leaseExpiresAt };
}
