/**
 * The chat session's state and the pure functions that move it: events, history replies and the
 * actions a UI may offer. Published history and the streaming draft stay apart (DESIGN §7): a
 * draft becomes history only through `message.published`, and never once a Stop was pressed.
 */
import type { RunEvent } from "../core/run-event.js";
import { connectionFlags, type ConnectionFailure, type ConnectionFlags, type ConnectionStatus } from "./connection-state.js";
import { applyPlanEvent, emptyPlan, type PlanState } from "./plan-state.js";
import type { ResumePoint } from "./resume-point.js";
import { IDLE_RUN, reduceRun, runFlags, type RunFlags, type RunState } from "./run-state.js";
import { isStopPending, stopAfterRun, type StopState } from "./stop-state.js";
import { TidemarkClientError } from "./tidemark-client-error.js";
import type { CancelView, HistoryMarker, HistoryView, MessageView, OperationView, StartRunBody, ThreadView } from "./wire-types.js";

export type { ResumePoint } from "./resume-point.js";

/**
 * The text of the message being streamed, kept apart from history. `stopped`: a Stop was
 * pressed, so it will never be published (save it, delete it, or continue without it); `saved`:
 * it was saved as a fragment, which now appears in `history` (labelled), so do not show it twice.
 */
export interface ChatDraft {
  messageId: string;
  runId: string;
  text: string;
  /** The seq of the last delta in `text`: a saved fragment is exactly this much. */
  lastSeq: number;
  status: "streaming" | "stopped" | "saved";
  fragmentMessageId: string | null;
  /** `json`: a structured step's object forming; stopped, it is never usable for execution. */
  format: "text" | "json";
}

/** The agent a new message runs (`GET /v1/agents`) and its config; the server's default (`chat`) when left out. */
export interface AgentChoice {
  agent?: string;
  config?: Record<string, unknown>;
}

/** What the session tried when the server answered `state_version_conflict`. */
export type AttemptedAction =
  | ({ kind: "send"; text: string } & AgentChoice)
  | { kind: "continue" }
  | ({ kind: "change_and_continue"; text: string } & AgentChoice);

/** Another tab (or client) moved the thread on: reload, or branch from the point this one built on. */
export interface ChatConflict {
  message: string;
  currentStateVersion: number | null;
  currentCheckpointId: string | null;
  allowedActions: string[];
  /** From `allowed_actions`' `fork_from_<checkpoint>`: where a branch would start. */
  forkCheckpointId: string | null;
  attempted: AttemptedAction;
}

/** Everything the session knows. */
export interface SessionState {
  threadId: string | null;
  stateVersion: number | null;
  headCheckpointId: string | null;
  history: MessageView[];
  markers: HistoryMarker[];
  operations: OperationView[];
  draft: ChatDraft | null;
  /**
   * Every message of the run being streamed now. A plan's parallel steps stream several at once;
   * `draft` is the one that streamed last.
   */
  streams: readonly ChatDraft[];
  /** The plan of the session's run (or of the last run a reload found): its steps and their statuses. */
  plan: PlanState | null;
  run: RunState;
  connection: { status: ConnectionStatus; failure: ConnectionFailure | null };
  conflict: ChatConflict | null;
  lastCancel: CancelView | null;
  /** The last Stop pressed in this session, until a new run starts: pending until the server confirmed the run's end. */
  stop: StopState | null;
  resumePoint: ResumePoint | null;
  /** Where this thread was branched from (null for a thread that is not a branch, or not loaded yet). */
  forkedFrom: ThreadView["forked_from"];
  /** The last failure of background work (a history refresh, a reload). */
  error: Error | null;
}

/** The actions the server can carry out now (DESIGN §9: offer only those). */
export interface ChatActions {
  canSend: boolean;
  canStop: boolean;
  canContinue: boolean;
  canChangeAndContinue: boolean;
  canBranch: boolean;
  canDeleteDraft: boolean;
  canSaveWhatISaw: boolean;
  canApprove: boolean;
  canResolveConflict: boolean;
}

/** What a UI renders: the state with its derived flags. */
export interface ChatSnapshot extends Omit<SessionState, "run" | "connection"> {
  run: RunState & RunFlags;
  connection: SessionState["connection"] & ConnectionFlags;
  actions: ChatActions;
}

/** A session on `threadId` (or none yet) before anything was loaded. */
export function initialSessionState(threadId: string | null): SessionState {
  return {
    threadId,
    stateVersion: null,
    headCheckpointId: null,
    history: [],
    markers: [],
    operations: [],
    draft: null,
    streams: [],
    plan: null,
    run: IDLE_RUN,
    connection: { status: "idle", failure: null },
    conflict: null,
    lastCancel: null,
    stop: null,
    resumePoint: null,
    forkedFrom: null,
    error: null,
  };
}

/** Moves the known version forward (never back); `checkpointId` null = the head is not known yet. */
export function advanceThread(state: SessionState, stateVersion: number | null, checkpointId: string | null): SessionState {
  if (stateVersion === null) return state;
  if (state.stateVersion === null || stateVersion > state.stateVersion) return { ...state, stateVersion, headCheckpointId: checkpointId };
  if (stateVersion === state.stateVersion && checkpointId !== null && state.headCheckpointId === null) {
    return { ...state, headCheckpointId: checkpointId };
  }
  return state;
}

/** Applies one event of the session's run; `refreshHistory` says history must be read again. */
export function applyRunEvent(state: SessionState, event: RunEvent, now: Date): { state: SessionState; refreshHistory: boolean } {
  if (event.run_id !== state.run.runId) return { state, refreshHistory: false };
  const run = reduceRun(state.run, { type: "event", event });
  let next: SessionState = { ...state, run, stop: stopAfterRun(state.stop, run) };
  const draft = next.draft?.runId === event.run_id ? next.draft : null;
  const freeze = (): ChatDraft | null => (draft?.status === "streaming" ? { ...draft, status: "stopped" } : next.draft);
  if (event.type === "step.updated" || event.type === "run.cancelling") {
    next.plan = applyPlanEvent(next.plan?.runId === event.run_id ? next.plan : emptyPlan(event.run_id), event);
  }
  switch (event.type) {
    case "message.delta": {
      // Nothing that arrives after a Stop is shown as the answer: it can never be published.
      const isStopped = draft?.status === "stopped" || draft?.status === "saved" || !runFlags(next.run).isRunning;
      if (isStopped) return { state: next, refreshHistory: false };
      // A history read that came back after the publication already holds this message: a late
      // delta must not start a second, partial copy of it.
      if (next.history.some((message) => message.message_id === event.message_id)) return { state: next, refreshHistory: false };
      // Each message keeps its own text: a plan's steps stream theirs at the same time.
      const earlier = next.streams.find((stream) => stream.messageId === event.message_id) ?? (draft?.messageId === event.message_id ? draft : undefined);
      const text = (earlier?.text ?? "") + event.text;
      const format = event.format ?? earlier?.format ?? "text";
      next.draft = { messageId: event.message_id, runId: event.run_id, text, lastSeq: event.seq, status: "streaming", fragmentMessageId: null, format };
      next.streams = [...next.streams.filter((stream) => stream.messageId !== event.message_id), next.draft];
      return { state: next, refreshHistory: false };
    }
    case "message.published": {
      next = advanceThread(next, event.state_version, event.checkpoint_id);
      const isOurs = draft?.messageId === event.message_id;
      if (isOurs) next.draft = null;
      if (next.streams.some((stream) => stream.messageId === event.message_id)) {
        next.streams = next.streams.filter((stream) => stream.messageId !== event.message_id);
      }
      if (next.history.some((message) => message.message_id === event.message_id)) return { state: next, refreshHistory: false };
      if (!isOurs || draft.status !== "streaming") return { state: next, refreshHistory: true };
      const position = (next.history.at(-1)?.position ?? -1) + 1;
      next.history = [...next.history, publishedFromDraft(draft, event, position, now)];
      // A plan's step publishes a labelled section: the event does not carry the label, history does.
      return { state: next, refreshHistory: isPlanRun(next) };
    }
    case "checkpoint.saved":
      return { state: advanceThread(next, event.state_version, event.checkpoint_id), refreshHistory: false };
    case "tool.result":
      return { state: next, refreshHistory: true };
    case "run.cancel_requested":
      next = advanceThread(next, event.accepted_state_version, event.resume_checkpoint_id);
      next.draft = freeze();
      next.streams = [];
      next.resumePoint = { checkpointId: event.resume_checkpoint_id, stateVersion: event.accepted_state_version };
      return { state: next, refreshHistory: false };
    case "run.cancelled":
    case "run.failed":
      next.draft = freeze();
      next.streams = [];
      return { state: next, refreshHistory: true };
    case "run.completed":
      return { state: { ...advanceThread(next, event.state_version, null), streams: [], resumePoint: null }, refreshHistory: true };
    default:
      return { state: next, refreshHistory: false };
  }
}

function publishedFromDraft(
  draft: ChatDraft,
  event: Extract<RunEvent, { type: "message.published" }>,
  position: number,
  now: Date,
): MessageView {
  return {
    message_id: event.message_id,
    role: event.role as MessageView["role"],
    content: draft.text,
    run_id: event.run_id,
    state_version: event.state_version,
    checkpoint_id: event.checkpoint_id,
    publication_status: "published",
    tool_calls: null,
    tool_call_id: null,
    tool_name: null,
    label: null,
    interrupted: false,
    format: draft.format,
    usable_for_execution: true,
    position,
    created_at: now.toISOString(),
  };
}

/** Takes a history reply as the truth, keeping only local entries newer than it. */
export function applyHistory(state: SessionState, history: HistoryView): SessionState {
  if (history.thread_id !== state.threadId) return state;
  const known = new Set(history.messages.map((message) => message.message_id));
  const newer = state.history.filter((message) => !known.has(message.message_id) && message.state_version > history.state_version);
  const isCurrent = state.stateVersion === null || history.state_version >= state.stateVersion;
  const draft = state.draft;
  const isDraftPublished = history.messages.some(
    (message) => message.message_id === draft?.messageId && message.publication_status === "published",
  );
  return {
    ...state,
    history: [...history.messages, ...newer],
    markers: history.markers,
    operations: history.operations,
    stateVersion: isCurrent ? history.state_version : state.stateVersion,
    headCheckpointId: isCurrent ? history.head_checkpoint_id : state.headCheckpointId,
    draft: isDraftPublished ? null : draft,
    streams: state.streams.some((stream) => known.has(stream.messageId)) ? state.streams.filter((stream) => !known.has(stream.messageId)) : state.streams,
  };
}

/** Whether the session's run is a plan of another agent than the chat loop (its sections are labelled messages). */
export function isPlanRun(state: Pick<SessionState, "plan">): boolean {
  return state.plan !== null && state.plan.agent !== null && state.plan.agent !== "chat";
}

/** The actions the server can carry out in `state`. */
export function availableActions(state: SessionState): ChatActions {
  const run = runFlags(state.run);
  const isFree = run.canSend && state.conflict === null;
  // A Stop already on its way (or being retried) is not pressed twice.
  const isStopping = isStopPending(state.stop) && state.stop?.runId === state.run.runId;
  const canResume = isFree && state.resumePoint !== null && state.threadId !== null;
  return {
    canSend: isFree,
    canStop: run.canStop && !isStopping,
    canContinue: canResume,
    canChangeAndContinue: canResume,
    canBranch: (canResume && state.resumePoint !== null) || state.conflict?.forkCheckpointId != null,
    canDeleteDraft: state.draft !== null && !run.isActive,
    // Not once the run completed: the Stop came too late, and the whole answer is saved.
    canSaveWhatISaw: state.draft?.status === "stopped" && (run.isTerminal || run.isCancelling) && state.run.status !== "completed",
    canApprove: run.canApprove && !isStopping,
    canResolveConflict: state.conflict !== null,
  };
}

/** The snapshot a UI renders. */
export function toSnapshot(state: SessionState): ChatSnapshot {
  return {
    ...state,
    run: { ...state.run, ...runFlags(state.run) },
    connection: { ...state.connection, ...connectionFlags(state.connection.status) },
    actions: availableActions(state),
  };
}

/** The body that starts the run `attempted` asks for, on what the session knows now. */
export function startRunBody(attempted: AttemptedAction, state: SessionState): StartRunBody {
  const input = attempted.kind === "continue" ? {} : { input: { role: "user" as const, content: attempted.text } };
  // Only when chosen: a plain message's body stays exactly what it was before agents existed.
  const choice = attempted.kind === "continue" ? {} : { ...(attempted.agent === undefined ? {} : { agent: attempted.agent }), ...(attempted.config === undefined ? {} : { config: attempted.config }) };
  if (attempted.kind === "send") return { ...input, ...choice, expected_state_version: state.stateVersion ?? undefined };
  if (state.resumePoint === null) throw new TidemarkClientError("no_saved_point", "There is no saved point to continue from.");
  return { ...input, ...choice, resume_from_checkpoint_id: state.resumePoint.checkpointId, expected_state_version: state.resumePoint.stateVersion };
}
