/**
 * A chat session over one thread: published history kept apart from the streaming draft, the
 * run's and the connection's state machines, and the actions DESIGN §9 lets a user take after a
 * Stop (continue, change and continue, branch, delete the draft, save what I saw).
 *
 * @example
 * const session = createChatSession({ client: createTidemarkClient({ baseUrl }) });
 * session.subscribe((snapshot) => render(snapshot.history, snapshot.draft, snapshot.actions));
 * await session.send("Tell me about tides");
 * await session.stop(); // the draft stays apart; history never gets the partial text
 */
import type { TidemarkClient } from "./api-client.js";
import { canConnectionTransition } from "./connection-state.js";
import { coalesce } from "./coalesce.js";
import { createRunId } from "./create-run-id.js";
import type { RunEventStreamOptions, StreamNotice } from "./event-stream.js";
import { applyRunSteps, planForRun } from "./plan-state.js";
import { followResumePoint, resumePointFromCheckpoints, resumePointFromHistory, type ResumePoint } from "./resume-point.js";
import { createRunFollower } from "./run-follower.js";
import { reduceRun, runFlags } from "./run-state.js";
import {
  advanceThread,
  applyHistory,
  applyRunEvent,
  initialSessionState,
  isPlanRun,
  startRunBody,
  toSnapshot,
  type AgentChoice,
  type AttemptedAction,
  type ChatSnapshot,
  type SessionState,
} from "./session-state.js";
import { conflictFrom } from "./session-conflict.js";
import { createSessionStop } from "./session-stop.js";
import { stopAfterRun } from "./stop-state.js";
import { TidemarkClientError } from "./tidemark-client-error.js";
import { createWakeablePauses } from "./wakeable-pauses.js";
import type { CancelView, HistoryView, MessageView, RunView, ThreadView } from "./wire-types.js";

/** Options for {@link createChatSession}. */
export interface ChatSessionOptions {
  client: TidemarkClient;
  /** An existing thread to load; without it, the first `send` creates one. */
  threadId?: string;
  /** Heartbeat timeout and retry budget of the event streams. */
  stream?: Pick<RunEventStreamOptions, "heartbeatTimeoutMs" | "retry">;
}

/**
 * A chat session. An action the server refuses rejects with its `TidemarkApiError`; one the
 * session refuses itself (nothing was sent) with a {@link TidemarkClientError}, each with a stable `code`.
 */
export interface ChatSession {
  getSnapshot(): ChatSnapshot;
  /** Calls `listener` with every new snapshot; returns the unsubscribe function. */
  subscribe(listener: (snapshot: ChatSnapshot) => void): () => void;
  /**
   * A new message on the thread's head, run by the chosen agent (default `chat`) with its config.
   * Resolves undefined on a conflict (see `snapshot.conflict`).
   */
  send(text: string, choice?: AgentChoice): Promise<RunView | undefined>;
  /**
   * Stop: cancels the run, and resolves once the server says the run has ended (the last cancel
   * reply; `undefined` when there was no run to stop). The draft is kept apart and never becomes
   * history. A cancel that gets no reply is sent again with backoff until it does (`snapshot.stop`
   * says it is `unconfirmed` meanwhile); the outcome may be `completed` when the Stop came too late.
   */
  stop(): Promise<CancelView | undefined>;
  /**
   * Runs the stopped step again from the saved point (no new message), with the stopped run's
   * agent: a plan runs only its unfinished steps, its completed ones are reused.
   */
  continueFromSavedPoint(): Promise<RunView | undefined>;
  /** A new message that continues from the saved point (run by the chosen agent, default `chat`). */
  changeAndContinue(text: string, choice?: AgentChoice): Promise<RunView | undefined>;
  /** Forks a branch at the saved point (or the conflict's) and switches the session to it. */
  branch(): Promise<ThreadView>;
  /** Drops the draft; a fragment saved of it is deleted on the server. */
  deleteDraft(): Promise<void>;
  /** Saves the stopped draft, exactly as far as it was received, as a labelled fragment. */
  saveWhatISaw(): Promise<MessageView>;
  approve(): Promise<RunView>;
  reject(reason?: string): Promise<RunView>;
  /** Reads the thread again (history is the truth) and follows its active run, if any. */
  reload(): Promise<void>;
  /** After a conflict: reload, or branch from the point this session built on and retry there. */
  resolveConflict(choice: "reload" | "branch"): Promise<void>;
  /**
   * Closes the event stream (connection `disconnected`); the run goes on on the server. A Stop
   * that has not been confirmed yet is not sent again: its `stop()` rejects with `session_closed`.
   */
  close(): void;
}

/** Creates a {@link ChatSession}; with `threadId` it starts loading that thread at once. */
export function createChatSession(options: ChatSessionOptions): ChatSession {
  const { client } = options;
  let state: SessionState = initialSessionState(options.threadId ?? null);
  let snapshot = toSnapshot(state);
  const listeners = new Set<(snapshot: ChatSnapshot) => void>();
  /** Automatic re-follows per run after a reload notice: at most two, so a broken buffer cannot loop. */
  const refollows = new Map<string, number>();
  /** Aborted by close(). */
  const closed = new AbortController();
  const pauses = createWakeablePauses(closed.signal);

  const update = (next: SessionState): void => {
    if (next === state) return;
    // However the run's end became known (an event, a status read, a cancel reply), it settles its Stop.
    const stop = stopAfterRun(next.stop, next.run);
    state = stop === next.stop ? next : { ...next, stop };
    snapshot = toSnapshot(state);
    for (const listener of listeners) listener(snapshot);
    pauses.changed();
  };
  const background = (work: Promise<unknown>): void => {
    work.catch((error: unknown) => update({ ...state, error: error instanceof Error ? error : new Error(String(error)) }));
  };
  const refreshHistory = coalesce(async () => {
    const threadId = state.threadId;
    if (threadId === null) return;
    const history = await client.getHistory(threadId);
    const next = applyHistory(state, history);
    // A read that works again ends the failure an earlier one reported.
    if (next !== state) update({ ...next, error: null });
  });

  /** Reads the plan's steps (the events may have been missed, and only the server knows when each started). */
  const refreshPlan = coalesce(async () => {
    const plan = state.plan;
    if (plan === null) return;
    const view = await client.getRunSteps(plan.runId);
    if (state.plan?.runId === plan.runId) update({ ...state, plan: applyRunSteps(state.plan, view) });
  });

  function onNotice(notice: StreamNotice): void {
    switch (notice.kind) {
      case "event": {
        const applied = applyRunEvent(state, notice.event, new Date());
        update(applied.state);
        if (applied.refreshHistory) background(refreshHistory());
        // At the run's end the server's rows say what finished, what was cut and what never began.
        if (isTerminalEvent(notice.event.type) && isPlanRun(state)) background(refreshPlan());
        return;
      }
      case "connection": {
        const isRejoined = state.connection.status === "reconnecting" && notice.state === "connected";
        if (canConnectionTransition(state.connection.status, notice.state)) {
          update({ ...state, connection: { status: notice.state, failure: notice.failure ?? null } });
        }
        // Back after a drop: the replay brings the events, the server's rows the start times.
        if (isRejoined && isPlanRun(state)) background(refreshPlan());
        return;
      }
      case "reload":
        // The buffer is gone or has a gap: history is the truth; replay the run once more if it is live.
        background(reload(true));
        return;
    }
  }

  const follower = createRunFollower(client, options.stream, onNotice, () => {
    // A stream that ended after its terminal event leaves nothing open.
    if (state.connection.status === "connected") update({ ...state, connection: { status: "idle", failure: null } });
  });
  function follow(runId: string): void {
    follower.drop();
    // Replaying from the start rebuilds the draft exactly, each seq once.
    const draft = state.draft?.runId === runId && state.draft.status === "streaming" ? null : state.draft;
    update({ ...state, draft, streams: [], connection: { status: "idle", failure: null } });
    follower.follow(runId, 0);
  }

  async function startRun(attempted: AttemptedAction): Promise<RunView | undefined> {
    if (!runFlags(state.run).canSend) throw new TidemarkClientError("run_in_progress", "The thread's run is still active: stop it first.");
    const body = startRunBody(attempted, state);
    const before = state;
    const runId = createRunId();
    follower.drop();
    // `starting` at once, before any await: a second send meanwhile is refused, and Stop can name the run.
    update({
      ...state,
      run: reduceRun(state.run, { type: "start", runId }),
      draft: null,
      streams: [],
      conflict: null,
      lastCancel: null,
      stop: null,
      resumePoint: null,
      error: null,
      connection: { status: "idle", failure: null },
    });
    let run: RunView;
    try {
      if (state.threadId === null) {
        const thread = await client.createThread();
        update(advanceThread({ ...state, threadId: thread.thread_id }, thread.state_version, thread.head_checkpoint_id));
        body.expected_state_version = thread.state_version;
      }
      run = await client.startRun(state.threadId!, { ...body, run_id: runId });
    } catch (error) {
      const { draft, resumePoint, lastCancel, stop: lastStop } = before;
      update({ ...state, run: reduceRun(state.run, { type: "start_failed" }), draft, resumePoint, lastCancel, stop: lastStop, conflict: conflictFrom(error, attempted) });
      if (state.conflict) return undefined;
      throw error;
    }
    if (state.run.runId !== runId) return run;
    update(
      advanceThread({ ...state, run: reduceRun(state.run, { type: "observed", run }), plan: planForRun(state.plan, run.run_id, run.agent) }, run.state_version, null),
    );
    follow(run.run_id);
    background(refreshHistory());
    return run;
  }

  const stop = createSessionStop({
    client,
    getState: () => state,
    update,
    signal: closed.signal,
    pause: pauses.pause,
    onEnded: afterStop,
  });

  /** The run has ended: a stream that was still trying to reach it has nothing left to follow; history is the truth. */
  function afterStop(runId: string): void {
    if (state.run.runId !== runId) return;
    const status = state.connection.status;
    if (runFlags(state.run).isTerminal && (status === "failed" || status === "reconnecting" || status === "connecting")) {
      follower.drop();
      update({ ...state, connection: { status: "idle", failure: null } });
    }
    background(refreshHistory());
  }

  async function branch(): Promise<ThreadView> {
    const threadId = state.threadId;
    const from = state.conflict?.forkCheckpointId ?? state.resumePoint?.checkpointId;
    if (threadId === null || from == null) throw new TidemarkClientError("no_saved_point", "There is no saved point to branch from.");
    if (runFlags(state.run).isActive) throw new TidemarkClientError("run_in_progress", "The thread's run is still active: stop it first.");
    const thread = await client.fork(threadId, { checkpoint_id: from });
    follower.drop();
    update({
      ...initialSessionState(thread.thread_id),
      stateVersion: thread.state_version,
      headCheckpointId: thread.head_checkpoint_id,
      forkedFrom: thread.forked_from,
      // The branch's head builds on the saved point: Continue works there too.
      resumePoint: { checkpointId: thread.head_checkpoint_id, stateVersion: thread.state_version },
    });
    await refreshHistory();
    return thread;
  }

  async function saveWhatISaw(): Promise<MessageView> {
    const draft = state.draft;
    if (draft === null || draft.status !== "stopped") throw new TidemarkClientError("no_stopped_draft", "There is no stopped draft to save.");
    // A fragment is saved once the stream is final: wait until the run has really stopped.
    if (!runFlags(state.run).isTerminal) await client.cancelRun(draft.runId, { waitMs: 30_000 });
    const message = await client.saveFragment(draft.runId, { message_id: draft.messageId, last_seq: draft.lastSeq });
    const next = advanceThread(state, message.state_version, message.checkpoint_id);
    update({
      ...next,
      draft: state.draft?.messageId === draft.messageId ? { ...draft, status: "saved", fragmentMessageId: message.message_id } : state.draft,
      resumePoint: followResumePoint(state.resumePoint, message.state_version, message.checkpoint_id),
      history: [...next.history.filter((entry) => entry.message_id !== message.message_id), message],
    });
    background(refreshHistory());
    return message;
  }

  async function deleteDraft(): Promise<void> {
    const draft = state.draft;
    const threadId = state.threadId;
    if (draft === null || threadId === null) return;
    if (draft.status === "saved" && draft.fragmentMessageId !== null) {
      const deleted = await client.deleteMessage(threadId, draft.fragmentMessageId);
      const next = advanceThread(state, deleted.state_version, deleted.checkpoint_id);
      update({
        ...next,
        resumePoint: followResumePoint(state.resumePoint, deleted.state_version, deleted.checkpoint_id),
        history: next.history.filter((entry) => entry.message_id !== draft.fragmentMessageId),
      });
      background(refreshHistory());
    }
    if (state.draft?.messageId === draft.messageId) update({ ...state, draft: null });
  }

  async function decide(decision: "approve" | "reject", reason?: string): Promise<RunView> {
    const runId = state.run.runId;
    if (runId === null || !runFlags(state.run).canApprove) throw new TidemarkClientError("run_not_interrupted", "The run is not waiting for a decision.");
    const run = decision === "approve" ? await client.approve(runId) : await client.reject(runId, reason);
    update({ ...state, run: reduceRun(state.run, { type: "observed", run }) });
    return run;
  }

  /** Reads the thread again and follows its active run; `isAutomatic`: asked for by the stream, not the user. */
  async function reload(isAutomatic = false): Promise<void> {
    const threadId = state.threadId;
    if (threadId === null) return;
    const [thread, history] = await Promise.all([client.getThread(threadId), client.getHistory(threadId)]);
    if (state.threadId !== threadId) return;
    let next = applyHistory({ ...state, conflict: null, error: null, forkedFrom: thread.forked_from }, history);
    const resumePoint = await resumePointAfterReload(threadId, next);
    if (state.threadId !== threadId) return;
    next = { ...next, resumePoint };
    const known = next.run.runId !== null && !runFlags(next.run).isTerminal ? next.run.runId : null;
    const activeRunId = thread.active_run_id ?? known;
    if (activeRunId === null) {
      update(next);
      background(loadLastPlan(threadId, history));
      return;
    }
    const run = await client.getRun(activeRunId);
    if (state.threadId !== threadId) return;
    const isSameRun = next.run.runId === run.run_id;
    const started = isSameRun ? next.run : reduceRun(reduceRun(next.run, { type: "reset" }), { type: "start", runId: run.run_id });
    update({
      ...next,
      run: reduceRun(started, { type: "observed", run }),
      draft: isSameRun ? next.draft : null,
      streams: isSameRun ? next.streams : [],
      plan: planForRun(next.plan, run.run_id, run.agent),
    });
    if (isPlanRun(state)) background(refreshPlan());
    const isLive = follower.runId === run.run_id && !snapshot.connection.isFailed;
    const count = refollows.get(run.run_id) ?? 0;
    if (runFlags(state.run).isTerminal || isLive || (isAutomatic && count >= 2)) return;
    if (isAutomatic) refollows.set(run.run_id, count + 1);
    follow(run.run_id);
  }

  /**
   * With no run going, the plan of the thread's last run, when that run published labelled
   * sections: after a page load the Stop's outcome (what was kept, cut, never begun) stays visible.
   */
  async function loadLastPlan(threadId: string, history: HistoryView): Promise<void> {
    const lastRunId = history.messages.findLast((message) => message.run_id !== null)?.run_id ?? null;
    const hasSections = history.messages.some((message) => message.run_id === lastRunId && message.label !== null);
    if (lastRunId === null || !hasSections || state.plan?.runId === lastRunId) return;
    const [run, steps] = await Promise.all([client.getRun(lastRunId), client.getRunSteps(lastRunId)]);
    // Only while nothing newer came along meanwhile.
    if (state.threadId !== threadId || (state.run.runId !== null && state.run.runId !== lastRunId)) return;
    update({ ...state, plan: applyRunSteps(planForRun(null, run.run_id, run.agent), steps) });
  }

  /** History decides the resume point unless the head is a fragment, a deletion or a branch point: then the checkpoints do. */
  async function resumePointAfterReload(threadId: string, reloaded: SessionState): Promise<ResumePoint | null> {
    const fromHistory = resumePointFromHistory(reloaded);
    if (fromHistory !== undefined || reloaded.headCheckpointId === null || reloaded.stateVersion === null) return fromHistory ?? null;
    const { checkpoints } = await client.listCheckpoints(threadId);
    return resumePointFromCheckpoints(checkpoints, reloaded.headCheckpointId, reloaded.stateVersion);
  }

  async function resolveConflict(choice: "reload" | "branch"): Promise<void> {
    const conflict = state.conflict;
    if (conflict === null) return;
    if (choice === "reload") return reload();
    await branch();
    // The same request again, on the branch: the explicit branch of race 3.
    await startRun(conflict.attempted);
  }

  let loading: Promise<void> = options.threadId === undefined ? Promise.resolve() : reload();
  background(loading);
  /** Actions wait for the initial load: they build on the version it reads. */
  const loaded =
    <A extends unknown[], R>(action: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await loading.catch(() => undefined);
      return action(...args);
    };

  return {
    getSnapshot: () => snapshot,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    send: loaded((text: string, choice: AgentChoice = {}) => startRun({ kind: "send", text, ...choice })),
    stop: loaded(stop),
    continueFromSavedPoint: loaded(() => startRun({ kind: "continue" })),
    changeAndContinue: loaded((text: string, choice: AgentChoice = {}) => startRun({ kind: "change_and_continue", text, ...choice })),
    branch: loaded(branch),
    deleteDraft: loaded(deleteDraft),
    saveWhatISaw: loaded(saveWhatISaw),
    approve: loaded(() => decide("approve")),
    reject: loaded((reason?: string) => decide("reject", reason)),
    reload: () => (loading = reload()),
    resolveConflict: loaded(resolveConflict),
    close: () => {
      closed.abort();
      follower.close();
    },
  };
}

function isTerminalEvent(type: string): boolean {
  return type === "run.completed" || type === "run.cancelled" || type === "run.failed";
}
