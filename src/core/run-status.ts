/**
 * The run state machine (DESIGN §3), all transitions in one place.
 *
 * ```
 * queued ──► running ──► completed
 *    │          ├──► interrupted ──► running | cancel_requested | queued (handed back)
 *    │          ├──► failed
 *    │          ├──► queued (handed back: drained or recovered, a new attempt)
 *    │          └──► cancel_requested ──► cancelling ──► cancelled
 *    └──────────────────────────────────────────────► cancelled
 * ```
 * Terminal statuses are sticky: nothing leaves them.
 */
export const RUN_STATUSES = [
  "queued",
  "running",
  "interrupted",
  "cancel_requested",
  "cancelling",
  "completed",
  "failed",
  "cancelled",
] as const;

/** Where a run is in its life. */
export type RunStatus = (typeof RUN_STATUSES)[number];

/** The statuses no transition leaves. */
export type TerminalRunStatus = "completed" | "failed" | "cancelled";

/** Why a run failed. */
export type FailureReason = "error" | "worker_lost" | "timeout" | "provider_error";

const TRANSITIONS: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  // A queued run may be cancelled directly (e.g. a Stop that arrived before it started) or
  // fail when recovery finds it orphaned and its policy says so.
  queued: ["running", "cancelled", "failed"],
  // running → queued: a recovered or drained run is handed back for another attempt.
  running: ["completed", "interrupted", "failed", "cancel_requested", "queued"],
  // interrupted → queued: handed back (drained or recovered); the next attempt asks for its approval again.
  interrupted: ["running", "cancel_requested", "failed", "queued"],
  // cancel_requested → cancelled directly when nothing uninterruptible is in flight;
  // → failed only when the worker was lost before it could confirm the stop.
  cancel_requested: ["cancelling", "cancelled", "failed"],
  cancelling: ["cancelled", "failed"],
  completed: [],
  failed: [],
  cancelled: [],
};

/** Whether `status` is terminal (sticky). */
export function isTerminalStatus(status: RunStatus): status is TerminalRunStatus {
  return status === "completed" || status === "failed" || status === "cancelled";
}

/** Whether the machine allows `from → to`. */
export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

/** The statuses reachable from `from` in one step. */
export function nextStatuses(from: RunStatus): readonly RunStatus[] {
  return TRANSITIONS[from];
}

/** Statuses from which a cancel can still be accepted. */
export const CANCELLABLE_STATUSES: readonly RunStatus[] = ["queued", "running", "interrupted"];

/** Whether a cancel request moves `status` forward (as opposed to being a repeat or too late). */
export function isCancellable(status: RunStatus): boolean {
  return CANCELLABLE_STATUSES.includes(status);
}

/** Whether a cancel has been accepted for a run in `status` but it has not stopped yet. */
export function isCancelPending(status: RunStatus): boolean {
  return status === "cancel_requested" || status === "cancelling";
}

/** Whether `value` names a run status. */
export function isRunStatus(value: unknown): value is RunStatus {
  return typeof value === "string" && (RUN_STATUSES as readonly string[]).includes(value);
}
