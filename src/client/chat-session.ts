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
import { createRunFollower } from "./run-follower.js";
import { reduceRun, runFlags } from "./run-state.js";
import {
  advanceThread,
  applyHistory,
  applyRunEvent,
  followResumePoint,
  initialSessionState,
  resumePointAfterReload,
  startRunBody,
  toSnapshot,
  type AttemptedAction,
  type ChatSnapshot,
  type SessionState,
} from "./session-state.js";
import { conflictFrom } from "./session-conflict.js";
import type { CancelView, MessageView, RunView, ThreadView } from "./wire-types.js";

/** Options for {@link createChatSession}. */
export interface ChatSessionOptions {
  client: TidemarkClient;
  /** An existing thread to load; without it, the first `send` creates one. */
  threadId?: string;
  /** Heartbeat timeout and retry budget of the event streams. */
  stream?: Pick<RunEventStreamOptions, "heartbeatTimeoutMs" | "retry">;
}

/** A chat session; every action rejects with the server's TidemarkApiError when it refuses. */
export interface ChatSession {
  getSnapshot(): ChatSnapshot;
  /** Calls `listener` with every new snapshot; returns the unsubscribe function. */
  subscribe(listener: (snapshot: ChatSnapshot) => void): () => void;
  /** A new message on the thread's head. Resolves undefined on a conflict (see `snapshot.conflict`). */
  send(text: string): Promise<RunView | undefined>;
  /** Stop: cancels the run; the draft is kept apart and never becomes history. */
  stop(): Promise<CancelView | undefined>;
  /** Runs the stopped step again from the saved point (no new message). */
  continueFromSavedPoint(): Promise<RunView | undefined>;
  /** A new message that continues from the saved point. */
  changeAndContinue(text: string): Promise<RunView | undefined>;
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
  /** Closes the event stream (connection `disconnected`); the run goes on on the server. */
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

  const update = (next: SessionState): void => {
    if (next === state) return;
    state = next;
    snapshot = toSnapshot(state);
    for (const listener of listeners) listener(snapshot);
  };
  const background = (work: Promise<unknown>): void => {
    work.catch((error: unknown) => update({ ...state, error: error instanceof Error ? error : new Error(String(error)) }));
  };
  const refreshHistory = coalesce(async () => {
    const threadId = state.threadId;
    if (threadId === null) return;
    const history = await client.getHistory(threadId);
    update(applyHistory(state, history));
  });

  function onNotice(notice: StreamNotice): void {
    switch (notice.kind) {
      case "event": {
        const applied = applyRunEvent(state, notice.event, new Date());
        update(applied.state);
        if (applied.refreshHistory) background(refreshHistory());
        return;
      }
      case "connection":
        if (canConnectionTransition(state.connection.status, notice.state)) {
          update({ ...state, connection: { status: notice.state, failure: notice.failure ?? null } });
        }
        return;
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
    update({ ...state, draft, connection: { status: "idle", failure: null } });
    follower.follow(runId, 0);
  }

  async function startRun(attempted: AttemptedAction): Promise<RunView | undefined> {
    if (!runFlags(state.run).canSend) throw new Error("The thread's run is still active: stop it first.");
    const body = startRunBody(attempted, state);
    const before = state;
    const runId = createRunId();
    follower.drop();
    // `starting` at once, before any await: a second send meanwhile is refused, and Stop can name the run.
    update({
      ...state,
      run: reduceRun(state.run, { type: "start", runId }),
      draft: null,
      conflict: null,
      lastCancel: null,
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
      const { draft, resumePoint, lastCancel } = before;
      update({ ...state, run: reduceRun(state.run, { type: "start_failed" }), draft, resumePoint, lastCancel, conflict: conflictFrom(error, attempted) });
      if (state.conflict) return undefined;
      throw error;
    }
    if (state.run.runId !== runId) return run;
    update(advanceThread({ ...state, run: reduceRun(state.run, { type: "observed", run }) }, run.state_version, null));
    follow(run.run_id);
    background(refreshHistory());
    return run;
  }

  async function stop(): Promise<CancelView | undefined> {
    const runId = state.run.runId;
    if (runId === null || !runFlags(state.run).canStop) return undefined;
    // From the moment Stop is pressed, the draft no longer grows: it can never be published.
    if (state.draft?.status === "streaming") update({ ...state, draft: { ...state.draft, status: "stopped" } });
    const reply = await client.cancelRun(runId);
    if (state.run.runId !== runId) return reply;
    let next: SessionState = { ...state, lastCancel: reply, run: reduceRun(state.run, { type: "cancel_reply", reply }) };
    if (!reply.already_terminal && reply.resume_checkpoint_id !== null && reply.accepted_state_version !== null) {
      next = advanceThread(next, reply.accepted_state_version, reply.resume_checkpoint_id);
      next.resumePoint = { checkpointId: reply.resume_checkpoint_id, stateVersion: reply.accepted_state_version };
    }
    update(next);
    return reply;
  }

  async function branch(): Promise<ThreadView> {
    const threadId = state.threadId;
    const from = state.conflict?.forkCheckpointId ?? state.resumePoint?.checkpointId;
    if (threadId === null || from == null) throw new Error("There is no saved point to branch from.");
    if (runFlags(state.run).isActive) throw new Error("The thread's run is still active: stop it first.");
    const thread = await client.fork(threadId, { checkpoint_id: from });
    follower.drop();
    update({
      ...initialSessionState(thread.thread_id),
      stateVersion: thread.state_version,
      headCheckpointId: thread.head_checkpoint_id,
      // The branch's head builds on the saved point: Continue works there too.
      resumePoint: { checkpointId: thread.head_checkpoint_id, stateVersion: thread.state_version },
    });
    await refreshHistory();
    return thread;
  }

  async function saveWhatISaw(): Promise<MessageView> {
    const draft = state.draft;
    if (draft === null || draft.status !== "stopped") throw new Error("There is no stopped draft to save.");
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
    if (runId === null || !runFlags(state.run).canApprove) throw new Error("The run is not waiting for a decision.");
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
    let next = applyHistory({ ...state, conflict: null, error: null }, history);
    next = { ...next, resumePoint: resumePointAfterReload(next) };
    const known = next.run.runId !== null && !runFlags(next.run).isTerminal ? next.run.runId : null;
    const activeRunId = thread.active_run_id ?? known;
    if (activeRunId === null) return update(next);
    const run = await client.getRun(activeRunId);
    if (state.threadId !== threadId) return;
    const isSameRun = next.run.runId === run.run_id;
    const started = isSameRun ? next.run : reduceRun(reduceRun(next.run, { type: "reset" }), { type: "start", runId: run.run_id });
    update({ ...next, run: reduceRun(started, { type: "observed", run }), draft: isSameRun ? next.draft : null });
    const isLive = follower.runId === run.run_id && !snapshot.connection.isFailed;
    const count = refollows.get(run.run_id) ?? 0;
    if (runFlags(state.run).isTerminal || isLive || (isAutomatic && count >= 2)) return;
    if (isAutomatic) refollows.set(run.run_id, count + 1);
    follow(run.run_id);
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
    send: loaded((text: string) => startRun({ kind: "send", text })),
    stop: loaded(stop),
    continueFromSavedPoint: loaded(() => startRun({ kind: "continue" })),
    changeAndContinue: loaded((text: string) => startRun({ kind: "change_and_continue", text })),
    branch: loaded(branch),
    deleteDraft: loaded(deleteDraft),
    saveWhatISaw: loaded(saveWhatISaw),
    approve: loaded(() => decide("approve")),
    reject: loaded((reason?: string) => decide("reject", reason)),
    reload: () => (loading = reload()),
    resolveConflict: loaded(resolveConflict),
    close: () => follower.close(),
  };
}
