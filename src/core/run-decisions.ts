/**
 * The domain rules the store carries out, as pure functions of what it read: which status a
 * cancel leads to, which resume policy a stopped step gets, and which writes a run's status
 * allows. The store decides nothing of its own; these are tested as tables (run-decisions.test.ts).
 */
import type { PendingStep, ResumePolicy, RunRecord } from "./records.js";
import { canTransition, isCancellable, isTerminalStatus, type RunStatus } from "./run-status.js";

/** What a cancel does to a run in a given status. */
export type CancelDecision =
  /** It never started: it is `cancelled` at once, and frees the thread if it held it. */
  | { kind: "cancel_now"; to: "cancelled" }
  /** It is working: `cancel_requested` until its worker confirms the stop. */
  | { kind: "request"; to: "cancel_requested" }
  /** A cancel was accepted before and the run is still stopping: nothing to write. */
  | { kind: "already_requested" }
  /** Too late: the run ended. Nothing to write; its terminal status is the answer. */
  | { kind: "already_terminal" };

/** The cancel of a run in `status` (DESIGN §3). */
export function decideCancel(status: RunStatus): CancelDecision {
  if (isTerminalStatus(status)) return { kind: "already_terminal" };
  if (!isCancellable(status)) return { kind: "already_requested" };
  return status === "queued" ? { kind: "cancel_now", to: "cancelled" } : { kind: "request", to: "cancel_requested" };
}

/** How a continuation treats the step a Stop caught: a tool step keeps the results already in; a model step is generated again. */
export function resumePolicyAfterCancel(pendingStep: PendingStep | null): ResumePolicy {
  return pendingStep?.kind === "tool" ? "reuse_tool_result" : "regenerate_pending_step";
}

/**
 * Whether a plain transition (not a cancel, not a finish) may move `run` from one of `from` to
 * `to`: the machine allows it, the run is where the caller thinks, in the caller's attempt, and
 * the target is neither a cancel (only an accepted cancel records one) nor terminal (a finish).
 */
export function canMoveRun(run: RunRecord, from: readonly RunStatus[], to: RunStatus, attempt?: number): boolean {
  if (!from.includes(run.status) || !canTransition(run.status, to)) return false;
  if (attempt !== undefined && run.attempt !== attempt) return false;
  return to !== "cancel_requested" && !isTerminalStatus(to);
}

/**
 * Whether `run` may be finished as `to` from one of `from`: the machine allows it, in the
 * caller's attempt, and only a run whose cancel was accepted (it has a cancel checkpoint) can end
 * `cancelled`.
 */
export function canFinishRun(run: RunRecord, from: readonly RunStatus[], to: "completed" | "cancelled" | "failed", attempt?: number): boolean {
  if (!from.includes(run.status) || !canTransition(run.status, to)) return false;
  if (attempt !== undefined && run.attempt !== attempt) return false;
  return to !== "cancelled" || run.cancelCheckpointId !== null;
}

/** Whether a worker in `attempt` may publish for `run`: only while it runs, in that attempt (a cancel or a takeover wins). */
export function canPublish(run: RunRecord, attempt?: number): boolean {
  return run.status === "running" && (attempt === undefined || run.attempt === attempt);
}
