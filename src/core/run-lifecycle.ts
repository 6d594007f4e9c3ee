/**
 * A run's life decided in one place: pure functions from (where the run stands, what happened)
 * to what to do. The executor, the cancel path, the cluster worker and recovery carry the
 * actions out; none of them decides on its own. `run-status.ts` says which transitions exist,
 * this module says which one fires. Every function here is tested as a table over every input.
 *
 * The stop of a run, after Temporal's requested-versus-effective cancellation, is one value:
 * - `requested`: this process aborted the work and is recording the Stop;
 * - `recorded`: the store accepted the Stop (here, or in another process whose notice came);
 * - `unrecorded`: the work was aborted but the store could not record the Stop;
 * - `draining`: the process shuts down; the run is handed back, not stopped;
 * - `fenced`: this process could not renew the run's lease in time: the work is aborted and the
 *   run is no longer this process's to write (recovery elsewhere decides its end, decision 014).
 * What the Stop *effectively* did is the run's terminal status, which only `decideSettle` picks.
 */
import type { RecoveryPolicy } from "./records.js";
import { isTerminalStatus, type RunStatus } from "./run-status.js";

/** Where a run's stop stands in the process executing it. */
export type StopState =
  | { kind: "none" }
  | { kind: "requested"; reason: string }
  | { kind: "recorded"; reason: string }
  | { kind: "unrecorded"; reason: string }
  | { kind: "draining" }
  | { kind: "fenced" };

/** What can happen to a run's stop. */
export type StopEvent =
  /** A Stop arrived here for a run this process executes: abort first, then record. */
  | { type: "stop_requested"; reason: string }
  /** The store accepted the Stop: this process's own request, or another process's notice. */
  | { type: "stop_recorded"; reason: string }
  /** The store refused or failed to record this process's request. */
  | { type: "stop_not_recorded" }
  /** The process shuts down and hands its runs back. */
  | { type: "drain" }
  /** The lease could not be renewed before a safety margin of its expiry: this process lets go of the run. */
  | { type: "lease_lost" };

/** A stop's next state, and whether the run's work must be aborted now. */
export interface StopStep {
  state: StopState;
  abortWork: boolean;
}

/**
 * The stop's state machine: the first of a Stop or a drain aborts the work; later events only
 * record. A lost lease overrides every state and is final: whatever was pending, nothing here may
 * write for the run any more.
 */
export function nextStop(state: StopState, event: StopEvent): StopStep {
  if (state.kind === "fenced") return unchanged(state);
  switch (event.type) {
    case "stop_requested":
      // A second Stop (or one after a drain began) changes nothing: the work is already aborted.
      return state.kind === "none" ? { state: { kind: "requested", reason: event.reason }, abortWork: true } : unchanged(state);
    case "stop_recorded":
      if (state.kind === "recorded") return unchanged(state);
      // A notice from the process that recorded it (record-then-abort) aborts here; so does a
      // Stop accepted while draining: the run must end cancelled, not be handed back.
      return { state: { kind: "recorded", reason: state.kind === "requested" ? state.reason : event.reason }, abortWork: state.kind === "none" || state.kind === "draining" };
    case "stop_not_recorded":
      return state.kind === "requested" ? { state: { kind: "unrecorded", reason: state.reason }, abortWork: false } : unchanged(state);
    case "drain":
      return state.kind === "none" ? { state: { kind: "draining" }, abortWork: true } : unchanged(state);
    case "lease_lost":
      // Any earlier stop already aborted the work; only its record (or hand-back) is given up.
      return { state: { kind: "fenced" }, abortWork: state.kind === "none" };
  }
}

function unchanged(state: StopState): StopStep {
  return { state, abortWork: false };
}

/** Whether the stop's outcome is known (the executor settles only then). */
export function isStopDecided(state: StopState): boolean {
  return state.kind !== "requested";
}

/**
 * The one protocol for a Stop, by where the run executes: here, the work is aborted at once and
 * the Stop recorded after (nothing can publish meanwhile: settling waits for the record); in
 * another process, the store records it first and a notice makes that process abort.
 */
export function stopProtocol(executesHere: boolean): "abort_then_record" | "record_then_notify" {
  return executesHere ? "abort_then_record" : "record_then_notify";
}

/** Where a Stop the store accepted must be carried out. */
export interface AcceptedCancelFacts {
  /** This process executes the run. */
  executesHere: boolean;
  /** Other processes share the database (a worker elsewhere may execute the run). */
  hasCluster: boolean;
  /** The store ended the run at once (it had not started). */
  isEnded: boolean;
}

/** What this process does with a cancel the store accepted. */
export interface AcceptedCancelPlan {
  /** Abort the work here (a no-op if a local Stop already did). */
  stopWorkHere: boolean;
  /** Tell the worker executing the run; it aborts, announces and settles. */
  notifyWorker: boolean;
  /** Announce the cancel on the run's stream from here (the one writer of its events). */
  announceHere: boolean;
  /** Emit the terminal event now: the run never started, nobody else will. */
  endNow: boolean;
  /** Start the next run waiting on the thread, which this cancel freed. */
  admitNext: boolean;
}

/** Carrying out an accepted cancel: who stops the work, who tells the stream, who ends the run. */
export function planAcceptedCancel(facts: AcceptedCancelFacts): AcceptedCancelPlan {
  const { executesHere, hasCluster, isEnded } = facts;
  if (!executesHere && hasCluster && !isEnded) {
    return { stopWorkHere: false, notifyWorker: true, announceHere: false, endNow: false, admitNext: false };
  }
  return { stopWorkHere: executesHere, notifyWorker: false, announceHere: true, endNow: isEnded, admitNext: isEnded && !executesHere };
}

/** How a run's work (its plan of steps) ended, before anyone looked at the store. */
export type WorkOutcome =
  | "done"
  /** The provider cancelled (HTTP 499): recorded as a cancel, never as a failure. */
  | "provider_cancelled"
  | "model_failed"
  /** The store refused to publish (the run was no longer running). */
  | "publication_rejected"
  | "error";

/** What the executor knows when its run's work ended. */
export interface SettleFacts {
  /** The run's status as the store has it now. */
  status: RunStatus;
  /** Whether the store's attempt is still the one this process executes (false: the lease was lost and the run recovered). */
  isSameAttempt: boolean;
  stop: StopState;
  outcome: WorkOutcome;
}

/** What the executor does to settle a run; after a `record_provider_cancel` or a failed `complete`, it re-reads and decides again. */
export type SettleAction =
  /** A later attempt owns the run: write nothing. */
  | { kind: "superseded" }
  | { kind: "record_provider_cancel" }
  /** running → completed (a compare-and-set). */
  | { kind: "complete" }
  /** The run completed (its answer was published): report it. */
  | { kind: "report_completed" }
  /** cancel_requested | cancelling → cancelled, with the discarded generation. */
  | { kind: "finish_cancelled" }
  /** running | interrupted → queued: a drain is a purposeful stop, not a failure. */
  | { kind: "hand_back"; from: "running" | "interrupted" }
  | { kind: "fail"; reason: "provider_error" | "error"; message: "cancel_not_recorded" | "model_error" | "run_error" }
  /** Ended through another path (recovery, a TERMINATE): report it, publish nothing. */
  | { kind: "report_terminal"; isLate: boolean }
  /** Nothing here may settle it (e.g. queued again by someone else). */
  | { kind: "leave" }
  /** This process lost the run's lease (fenced): write nothing; the recoverer's policy decides its end. */
  | { kind: "relinquish" };

/** Settling a run whose work ended: the store's status decides, the stop and the work's outcome refine. */
export function decideSettle(facts: SettleFacts): SettleAction {
  const { status, isSameAttempt, stop, outcome } = facts;
  if (stop.kind === "fenced") return { kind: "relinquish" };
  if (!isSameAttempt) return { kind: "superseded" };
  const isStopped = stop.kind !== "none";
  if (status === "running" && !isStopped && outcome === "provider_cancelled") return { kind: "record_provider_cancel" };
  if (status === "running" && !isStopped && outcome === "done") return { kind: "complete" };
  if (status === "completed") return { kind: "report_completed" };
  if (status === "cancel_requested" || status === "cancelling") return { kind: "finish_cancelled" };
  if ((status === "running" || status === "interrupted") && stop.kind === "draining") return { kind: "hand_back", from: status };
  if (status === "running") {
    // Still running after a Stop: the Stop stopped the work but was not recorded; never "cancelled".
    if (isStopped) return { kind: "fail", reason: "error", message: "cancel_not_recorded" };
    if (outcome === "model_failed" || outcome === "provider_cancelled") return { kind: "fail", reason: "provider_error", message: "model_error" };
    return { kind: "fail", reason: "error", message: "run_error" };
  }
  if (isTerminalStatus(status)) return { kind: "report_terminal", isLate: outcome !== "publication_rejected" };
  return { kind: "leave" };
}

/** What recovery does with a run whose lease expired (its process died) or that nobody claimed. */
export type RecoveryAction =
  | { kind: "claim" }
  /** Its cancel was accepted: its work stopped with its worker. */
  | { kind: "cancel" }
  /** Run again from the last checkpoint as a new attempt. */
  | { kind: "resume" }
  | { kind: "fail" }
  /** Already ended: nothing to recover. */
  | { kind: "none" };

/** Recovering a run, by its status and its policy; every action but `claim` first takes the lost attempt's lease. */
export function decideRecovery(status: RunStatus, policy: RecoveryPolicy): RecoveryAction {
  if (status === "queued") return { kind: "claim" };
  if (status === "cancel_requested" || status === "cancelling") return { kind: "cancel" };
  if (status === "running" || status === "interrupted") return policy === "resume" ? { kind: "resume" } : { kind: "fail" };
  return { kind: "none" };
}
