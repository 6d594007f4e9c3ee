/**
 * The client's run state machine (DESIGN §3 and §13): the server's run statuses plus the
 * client-side `idle` (no run) and `starting` (the create is on its way). All transitions are in
 * one table; {@link reduceRun} is a pure reducer over what the client observes, and the flags come
 * from the state alone ({@link runFlags}), never from separate booleans.
 *
 * The client observes rather than drives the run, so it may see a later status without the ones
 * in between (a status read after a reconnect); the table allows such forward jumps and never a
 * step back. Terminal statuses are sticky: only a new run (`start`) or `reset` leaves them.
 */
import type { RunEvent } from "../core/run-event.js";
import type { RunStatus } from "../core/run-status.js";
import type { CancelView, RunView } from "./wire-types.js";

/** Where the session's run is: no run, being created, or one of the server's statuses. */
export type RunPhase = "idle" | "starting" | RunStatus;

/** A consequential operation waiting for the user's approve or reject. */
export interface PendingApproval {
  opId: string;
  tool: string;
  idempotencyKey: string;
  preview: unknown;
}

/** What the client knows of its current run. */
export interface RunState {
  status: RunPhase;
  runId: string | null;
  attempt: number;
  cancelReason: string | null;
  failure: { reason: string; message: string } | null;
  /** The work that cannot be interrupted and is still finishing (`cancelling`). */
  activeOperation: string | null;
  pendingApproval: PendingApproval | null;
  publishedMessageId: string | null;
}

/** What the client observed about its run. */
export type RunAction =
  | { type: "start"; runId: string }
  | { type: "start_failed" }
  | { type: "reset" }
  | { type: "observed"; run: RunView }
  | { type: "cancel_reply"; reply: CancelView }
  | { type: "event"; event: RunEvent };

const ACTIVE_AFTER_START: readonly RunPhase[] = ["queued", "running", "interrupted", "cancel_requested", "cancelling"];
const TERMINAL: readonly RunPhase[] = ["completed", "failed", "cancelled"];

const TRANSITIONS: Readonly<Record<RunPhase, readonly RunPhase[]>> = {
  idle: ["starting"],
  // A repeated create returns the run as it is now, whatever its status; a refused one goes back to idle.
  starting: ["idle", ...ACTIVE_AFTER_START, ...TERMINAL],
  queued: ["running", "interrupted", "cancel_requested", "cancelling", ...TERMINAL],
  // → queued: the run was handed back (drained or recovered) for a new attempt.
  running: ["queued", "interrupted", "cancel_requested", "cancelling", ...TERMINAL],
  interrupted: ["queued", "running", "cancel_requested", "cancelling", ...TERMINAL],
  cancel_requested: ["cancelling", "cancelled", "failed"],
  cancelling: ["cancelled", "failed"],
  completed: ["starting"],
  failed: ["starting"],
  cancelled: ["starting"],
};

/** Whether the client's machine allows `from → to` (`reset` to idle is always allowed). */
export function canRunTransition(from: RunPhase, to: RunPhase): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Whether `status` is terminal: nothing but a new run leaves it. */
export function isTerminalRunPhase(status: RunPhase): boolean {
  return TERMINAL.includes(status);
}

/** No run yet. */
export const IDLE_RUN: RunState = {
  status: "idle",
  runId: null,
  attempt: 0,
  cancelReason: null,
  failure: null,
  activeOperation: null,
  pendingApproval: null,
  publishedMessageId: null,
};

/** The next run state after `action` (the same object when nothing changes). */
export function reduceRun(state: RunState, action: RunAction): RunState {
  switch (action.type) {
    case "start":
      return canRunTransition(state.status, "starting") ? { ...IDLE_RUN, status: "starting", runId: action.runId } : state;
    case "start_failed":
      return state.status === "starting" ? IDLE_RUN : state;
    case "reset":
      return IDLE_RUN;
    case "observed": {
      const run = action.run;
      if (state.runId !== null && state.runId !== run.run_id) return state;
      // A status read older than what the events already said is ignored, never a step back.
      if (run.status !== state.status && !canRunTransition(state.status, run.status)) return state;
      return {
        ...move(state, run.status),
        runId: run.run_id,
        attempt: run.attempt,
        cancelReason: run.cancel_reason ?? state.cancelReason,
        failure: run.failure_reason ? { reason: run.failure_reason, message: run.failure_message ?? "" } : state.failure,
        activeOperation: run.active_operation,
        publishedMessageId: run.published_message_id ?? state.publishedMessageId,
      };
    }
    case "cancel_reply":
      return state.runId === action.reply.run_id ? move(state, action.reply.status) : state;
    case "event":
      return state.runId === action.event.run_id ? applyEvent(state, action.event) : state;
  }
}

function move(state: RunState, to: RunPhase): RunState {
  if (to === state.status || !canRunTransition(state.status, to)) return state;
  return { ...state, status: to, pendingApproval: to === "interrupted" ? state.pendingApproval : null };
}

/** Moves to `to` and takes `fields` with it, or changes nothing if the machine refuses. */
function moveWith(state: RunState, to: RunPhase, fields: Partial<RunState> = {}): RunState {
  const moved = move(state, to);
  return moved.status === to ? { ...moved, ...fields } : state;
}

function applyEvent(state: RunState, event: RunEvent): RunState {
  switch (event.type) {
    case "run.started":
      return moveWith(state, "running", { attempt: event.attempt });
    case "run.interrupted":
      return moveWith(state, "interrupted", {
        pendingApproval: { opId: event.op_id, tool: event.tool, idempotencyKey: event.idempotency_key, preview: event.preview },
      });
    case "run.resumed":
      return moveWith(state, "running");
    case "run.cancel_requested":
      return moveWith(state, "cancel_requested", { cancelReason: event.reason });
    case "run.cancelling":
      return moveWith(state, "cancelling", { activeOperation: event.active_operation });
    case "run.cancelled":
      return moveWith(state, "cancelled", { cancelReason: event.reason, activeOperation: null });
    case "run.completed":
      return moveWith(state, "completed", { publishedMessageId: event.published_message_id });
    case "run.failed":
      return moveWith(state, "failed", { failure: { reason: event.reason, message: event.message } });
    default:
      return state;
  }
}

/** What a UI may show and offer for the run, derived from its state alone. */
export interface RunFlags {
  /** A run exists and has not ended (including while it is being created or cancelled). */
  isActive: boolean;
  /** Work is going on and nothing is asked of the user: starting, queued or running. */
  isRunning: boolean;
  /** Stop was accepted but the run has not stopped yet (`cancel_requested`, `cancelling`). */
  isCancelling: boolean;
  /** The run waits for an approve or reject. */
  isAwaitingApproval: boolean;
  isTerminal: boolean;
  /** Stop is meaningful: the run may still be cancelled. */
  canStop: boolean;
  /** The run was stopped, so there is a saved point to continue from. */
  canContinue: boolean;
  canApprove: boolean;
  /** No run is in the way of a new message. */
  canSend: boolean;
}

/** Computes {@link RunFlags} from `state`. */
export function runFlags(state: RunState): RunFlags {
  const status = state.status;
  const isTerminal = isTerminalRunPhase(status);
  const isAwaitingApproval = status === "interrupted" && state.pendingApproval !== null;
  return {
    isActive: status !== "idle" && !isTerminal,
    isRunning: status === "starting" || status === "queued" || status === "running",
    isCancelling: status === "cancel_requested" || status === "cancelling",
    isAwaitingApproval,
    isTerminal,
    canStop: status === "starting" || status === "queued" || status === "running" || status === "interrupted",
    canContinue: status === "cancelled",
    canApprove: isAwaitingApproval,
    canSend: status === "idle" || isTerminal,
  };
}
