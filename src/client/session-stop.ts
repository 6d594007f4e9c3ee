/**
 * A chat session's Stop: it freezes the draft at once, delivers the cancel until the server has
 * answered for the run's end (retrying while there is no reply, see deliver-stop.ts), and keeps
 * `state.stop` saying where it stands. Pressing Stop again while one is pending returns it.
 */
import type { TidemarkClient } from "./api-client.js";
import { deliverStop } from "./deliver-stop.js";
import { reduceRun, runFlags } from "./run-state.js";
import { advanceThread, type SessionState } from "./session-state.js";
import { isStopPending, stopAnswered, stopPressed, stopUnanswered } from "./stop-state.js";
import { TidemarkApiError } from "./tidemark-api-error.js";
import type { CancelView } from "./wire-types.js";

/** What the Stop needs from its session. */
export interface StopHost {
  client: TidemarkClient;
  getState(): SessionState;
  update(next: SessionState): void;
  /** Aborted when the session closes. */
  signal: AbortSignal;
  pause(ms: number, isOver: () => boolean): Promise<void>;
  /** The stopped run has ended: the session tidies its stream and reads history. */
  onEnded(runId: string): void;
}

/** Creates the session's `stop()`. */
export function createSessionStop(host: StopHost): () => Promise<CancelView | undefined> {
  let stopping: { runId: string; done: Promise<CancelView | undefined> } | null = null;

  function applyReply(runId: string, reply: CancelView): void {
    const state = host.getState();
    if (state.run.runId !== runId) return;
    let next: SessionState = {
      ...state,
      lastCancel: reply,
      run: reduceRun(state.run, { type: "cancel_reply", reply }),
      stop: state.stop && stopAnswered(state.stop, reply),
    };
    if (!reply.already_terminal && reply.resume_checkpoint_id !== null && reply.accepted_state_version !== null) {
      next = advanceThread(next, reply.accepted_state_version, reply.resume_checkpoint_id);
      next.resumePoint = { checkpointId: reply.resume_checkpoint_id, stateVersion: reply.accepted_state_version };
    }
    host.update(next);
  }

  return function stop(): Promise<CancelView | undefined> {
    const state = host.getState();
    const runId = state.run.runId;
    if (stopping !== null && stopping.runId === runId && isStopPending(state.stop)) return stopping.done;
    if (runId === null || !runFlags(state.run).canStop) return Promise.resolve(undefined);
    // From the moment Stop is pressed, the draft no longer grows: it can never be published.
    const draft = state.draft?.status === "streaming" ? { ...state.draft, status: "stopped" as const } : state.draft;
    host.update({ ...state, draft, stop: stopPressed(runId) });
    const isAbandoned = (): boolean => host.getState().run.runId !== runId;
    const done = deliverStop({
      client: host.client,
      runId,
      signal: host.signal,
      isAbandoned,
      // The run's events said it ended: ask at once, and the reply says how (e.g. too late: completed).
      pause: (ms) => host.pause(ms, () => isAbandoned() || runFlags(host.getState().run).isTerminal),
      onReply: (reply) => applyReply(runId, reply),
      onUnanswered: (error) => {
        const current = host.getState();
        if (current.stop?.runId !== runId) return;
        const failure = TidemarkApiError.isInstance(error) ? error.message : "The server cannot be reached.";
        host.update({ ...current, stop: stopUnanswered(current.stop, failure) });
      },
    }).then(
      (reply) => {
        host.onEnded(runId);
        return reply;
      },
      (error: unknown) => {
        // Refused (e.g. the run is unknown) or abandoned: the Stop is not pending any more.
        const current = host.getState();
        if (current.stop?.runId === runId && isStopPending(current.stop)) host.update({ ...current, stop: null });
        throw error;
      },
    );
    stopping = { runId, done };
    return done;
  };
}
