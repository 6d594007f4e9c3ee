/**
 * A Stop the user pressed, from the press until the server confirmed how the run ended. A Stop
 * is a request, not a fact (STYLE §8): until the server answers it may not have reached it at
 * all, and the run may still complete and publish its answer. All transitions are here.
 *
 * ```
 * sending ──► accepted ──► confirmed {outcome}
 *    │  ▲         │
 *    ▼  │         │   (no reply yet: network down or a server error; the cancel is retried,
 * unconfirmed ────┘    it is idempotent)
 * ```
 */
import type { RunPhase } from "./run-state.js";
import type { CancelView } from "./wire-types.js";

/** Where a Stop stands. */
export type StopStatus = "sending" | "unconfirmed" | "accepted" | "confirmed";

/** How the stopped run ended: `completed` means the Stop came too late and the answer was saved. */
export type StopOutcome = "cancelled" | "completed" | "failed";

/** A Stop of one run. */
export interface StopState {
  runId: string;
  /**
   * `sending`: the cancel is on its way; `unconfirmed`: it has not reached the server yet (no
   * reply: the network is down or the server failed) and is being retried; `accepted`: the
   * server recorded it and the run is winding down; `confirmed`: the run has ended (`outcome`).
   */
  status: StopStatus;
  /** Cancel requests that got no reply so far. */
  failedAttempts: number;
  /** Why the last request got no reply (while `unconfirmed`). */
  failure: string | null;
  /** How the run ended, once `confirmed`. */
  outcome: StopOutcome | null;
}

/** The Stop of `runId`, just pressed. */
export function stopPressed(runId: string): StopState {
  return { runId, status: "sending", failedAttempts: 0, failure: null, outcome: null };
}

/** A cancel request got no reply: the Stop is not confirmed, and will be tried again. */
export function stopUnanswered(stop: StopState, failure: string): StopState {
  if (stop.status === "confirmed") return stop;
  return { ...stop, status: "unconfirmed", failedAttempts: stop.failedAttempts + 1, failure };
}

/** The server answered a cancel request: recorded (`accepted`), or the run has ended (`confirmed`). */
export function stopAnswered(stop: StopState, reply: CancelView): StopState {
  if (stop.status === "confirmed" || reply.run_id !== stop.runId) return stop;
  const outcome = outcomeOf(reply.status);
  return outcome ? { ...stop, status: "confirmed", failure: null, outcome } : { ...stop, status: "accepted", failure: null };
}

/** The run's own events (or a status read) said it ended: that is the Stop's outcome too. */
export function stopAfterRun(stop: StopState | null, run: { runId: string | null; status: RunPhase }): StopState | null {
  if (stop === null || stop.status === "confirmed" || run.runId !== stop.runId) return stop;
  const outcome = outcomeOf(run.status);
  return outcome ? { ...stop, status: "confirmed", failure: null, outcome } : stop;
}

/** Whether the Stop still waits for the server's word. */
export function isStopPending(stop: StopState | null): boolean {
  return stop !== null && stop.status !== "confirmed";
}

function outcomeOf(status: RunPhase): StopOutcome | null {
  return status === "cancelled" || status === "completed" || status === "failed" ? status : null;
}
