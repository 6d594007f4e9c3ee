/**
 * The storage contract: types only. Every adapter (SQLite, PostgreSQL) implements it
 * and passes one conformance suite. Every method is scoped by tenant, except the system-level
 * ones used by recovery and `tidemark check`, which say so.
 *
 * Methods that can lose a race (publish, cancel, finish) are compare-and-set transitions: they
 * return what happened instead of throwing, so the runtime can tell "too late" from "failed".
 */
import type {
  CancelledGeneration,
  CheckpointRecord,
  FailureReason,
  MessageFormat,
  MessageRecord,
  MessageToolCall,
  OperationRecord,
  PendingStep,
  RecoveryPolicy,
  RetentionLayer,
  RunInput,
  RunRecord,
  RunStatus,
  RunStepRecord,
  StepStatus,
  RunTransitionRecord,
  ThreadRecord,
  TraceRecord,
  UsageStats,
} from "../core/index.js";

/** What every store method takes last: a signal, checked on entry (an aborted call touches nothing). */
export interface CallOptions {
  signal?: AbortSignal;
}

/** Options for {@link Store.renewLeases}. */
export interface RenewLeasesOptions extends CallOptions {
  /** Only these runs' leases (a lease the worker gave up, e.g. after it fenced itself, is never renewed again). */
  runs?: readonly { tenantId: string; runId: string }[];
}

export interface CreateThreadInput {
  tenantId: string;
  threadId: string;
  /** The root checkpoint's id (version 1). */
  checkpointId: string;
  metadata: Record<string, unknown>;
  /** A title the client chose (the automatic title then never replaces it). */
  title?: string | null;
  now: number;
}

export interface ForkThreadInput {
  tenantId: string;
  /** The thread the client forks (the fork checkpoint may be one it inherited). */
  sourceThreadId: string;
  /** The fork checkpoint: any checkpoint of the source's lineage. */
  fromCheckpointId: string;
  /** The branch's id and its first checkpoint's id (`fork_created`). */
  threadId: string;
  checkpointId: string;
  /** Merged over `{forked_from: {thread_id, checkpoint_id}}`. */
  metadata: Record<string, unknown>;
  now: number;
}

export interface DeleteThreadInput {
  tenantId: string;
  threadId: string;
  /** The cancel reason written on every run the delete stops. */
  reason: string;
  /** A new id for each cancel checkpoint the delete writes. */
  createCheckpointId: () => string;
  now: number;
}

/** A cancel accepted in the store: the run, and the thread and checkpoint it moved to. */
export interface AcceptedCancelRecord {
  run: RunRecord;
  thread: ThreadRecord;
  checkpoint: CheckpointRecord;
  /** The heard part of a live turn's answer, published with the cancel (`interrupted`). */
  heardMessage?: MessageRecord;
}

export type DeleteThreadResult =
  /**
   * Deleted, in one transaction with a cancel of each of its runs: `cancels` are the runs it
   * stopped (a queued or waiting one is `cancelled` at once; a started one `cancel_requested`
   * until its worker stops), `stopping` those whose cancel was accepted before.
   */
  | { kind: "deleted"; cancels: AcceptedCancelRecord[]; stopping: RunRecord[] }
  /** Unknown, foreign, or already deleted. */
  | { kind: "thread_not_found" };

export type ForkThreadResult =
  /** Two rows written (the branch and its `fork_created` checkpoint), whatever the prefix's length. */
  | { kind: "forked"; thread: ThreadRecord; checkpoint: CheckpointRecord }
  /** The source is unknown, foreign or deleted. */
  | { kind: "thread_not_found" }
  /** The checkpoint is unknown, foreign, or not in the source's lineage. */
  | { kind: "checkpoint_not_found" };

/** Options for {@link Store.listMessages}. */
export interface ListMessagesOptions extends CallOptions {
  /** Only the last `limit` messages (still in order): the cost follows `limit`, not the history's length. */
  limit?: number;
}

/** Where a page of {@link Store.listThreads} starts: the last thread of the previous page. */
export interface ThreadListPosition {
  updatedAt: number;
  threadId: string;
}

/** Options for {@link Store.listThreads}. */
export interface ListThreadsOptions extends CallOptions {
  /** At most this many threads (below 1: none). The cost follows `limit`, not the tenant's number of threads. */
  limit: number;
  /** Only threads after this one in the listing's order (keyset pagination); absent: from the most recent. */
  before?: ThreadListPosition;
}

/** What a run's execution starts from ({@link Store.readExecutionView}), read as one consistent view. */
export interface ExecutionView {
  /** As {@link Store.listMessages} gives them. */
  messages: MessageRecord[];
  /** As {@link Store.listOperations} gives them. */
  operations: OperationRecord[];
  /** As {@link Store.listCheckpoints} gives them from `checkpointsFromVersion`. */
  checkpoints: CheckpointRecord[];
}

/** Options for {@link Store.readExecutionView}. */
export interface ReadExecutionViewOptions extends CallOptions {
  /** Only checkpoints at this version or newer: a turn's cost must not grow with its thread. */
  checkpointsFromVersion: number;
}

/** Options for {@link Store.listCheckpoints}. */
export interface ListCheckpointsOptions extends CallOptions {
  /** Only checkpoints at this version or newer. */
  fromVersion?: number;
}

export interface CreateRunInput {
  tenantId: string;
  runId: string;
  threadId: string;
  /**
   * A run in a thread of its own: the thread (`threadId`, with this root checkpoint) is created in
   * the run's transaction, so neither exists without the other. A repeat of the run (same run id
   * or idempotency key, same request) finds the first run and its thread, and creates nothing.
   */
  newThread?: Pick<CreateThreadInput, "checkpointId" | "metadata" | "title">;
  /** Null to continue from a Stop without a new message (the pending step runs again). */
  input: RunInput | null;
  inputMessageId: string;
  /** The checkpoint that accepts the input. */
  checkpointId: string;
  idempotencyKey: string | null;
  requestHash: string;
  model: string;
  /** The agent that executes the run (default `chat`). */
  agent?: string;
  /** The agent's config as JSON text, already validated; null or absent for none. */
  config?: string | null;
  /** A system instruction for this run's model requests only (never published); null or absent for none. */
  instructions?: string | null;
  /** The client's notes about the run, stored as given; absent for none (`{}`). */
  metadata?: Record<string, unknown>;
  onDisconnect: "continue" | "cancel";
  recoveryPolicy: RecoveryPolicy;
  /** Enforced when given: the thread must be at exactly this version. */
  expectedStateVersion: number | null;
  /**
   * Continue from this checkpoint: it must be in the thread's lineage and its head, and the run
   * builds on exactly its version (when `expectedStateVersion` is not given). Checked in the
   * create's own transaction.
   */
  resumeFromCheckpointId?: string | null;
  /** On a busy thread, wait (in order) instead of answering run_in_progress. */
  enqueue?: boolean;
  /** The tenant's most unfinished runs, checked in the create's own transaction; no limit when absent. */
  tenantRunLimits?: TenantRunLimits;
  now: number;
}

/** How many unfinished runs one tenant may have: running (or about to) and waiting behind another run (`Infinity`: no limit, nothing counted). */
export interface TenantRunLimits {
  maxActiveRuns: number;
  maxQueuedRuns: number;
}

export type CreateRunResult =
  /** `message` is the accepted input (null when a run continues from a Stop without one). */
  | { kind: "created"; run: RunRecord; thread: ThreadRecord; message: MessageRecord | null; checkpoint: CheckpointRecord }
  /** The same run_id / Idempotency-Key with the same request: the earlier run. */
  | { kind: "existing"; run: RunRecord }
  /** The same run_id / Idempotency-Key with a different request. */
  | { kind: "key_reused"; run: RunRecord }
  | { kind: "thread_not_found" }
  /** The resume checkpoint is unknown, foreign, or not in the thread's lineage. */
  | { kind: "checkpoint_not_found" }
  /**
   * The thread moved on from what the client built on: `builtOnCheckpointId` is that point (the
   * resume checkpoint, or the lineage's checkpoint at the expected version), where a branch would start.
   */
  | { kind: "state_version_conflict"; thread: ThreadRecord; builtOnCheckpointId: string | null }
  | { kind: "run_in_progress"; thread: ThreadRecord }
  /** The tenant already has as many active (or waiting) runs as its limit allows. */
  | { kind: "too_many_runs"; queue: "active" | "queued"; limit: number }
  /** Enqueued behind the active run: `isWaiting`, its input not published yet. */
  | { kind: "enqueued"; run: RunRecord; thread: ThreadRecord }
  /** An operation of the thread is `outcome_unknown`: it must be confirmed before any other run. */
  | { kind: "operation_unconfirmed"; thread: ThreadRecord; operations: OperationRecord[] };

/** Queued runs, by what they wait for ({@link Store.countQueuedRuns}). */
export interface QueuedRunCounts {
  /** Queued and free to start: a worker has not claimed them yet. */
  unclaimed: number;
  /** Enqueued behind the active run of their thread (`multitask: "enqueue"`). */
  waiting: number;
}

export interface ClaimQueuedRunsInput {
  owner: string;
  leaseExpiresAt: number;
  /** At most this many runs, oldest first. */
  limit: number;
  now: number;
}

export interface ClaimRunInput {
  tenantId: string;
  runId: string;
  owner: string;
  leaseExpiresAt: number;
  now: number;
}

export interface PublishMessageInput {
  tenantId: string;
  runId: string;
  messageId: string;
  checkpointId: string;
  role: "assistant" | "tool";
  content: string;
  /** An assistant message's tool calls. */
  toolCalls?: MessageToolCall[];
  /** A tool message: the call it answers. */
  toolCallId?: string;
  toolName?: string;
  completedStepId: string;
  /** A labelled block: the label shown with it (e.g. a plan subtask's title). */
  label?: string;
  /** `json` for a structured step's object, complete and validated (default `text`). */
  format?: MessageFormat;
  /**
   * Also record this publication as the completed work of step `completedStepId` in the run's
   * `run_steps` row (checkpoint and message id), in the same transaction; the row is created if the
   * step journal has not written it yet. With `complete`, the run ends with this step: the step
   * ends `completed` and the run's other unfinished steps end as {@link Store.finishRun} ends them.
   */
  recordsStep?: boolean;
  /** Counts caused by this step, added to the run and the thread in the same transaction. */
  stats: Partial<UsageStats>;
  /** Also complete the run in the same transaction (the last step of a run). */
  complete: boolean;
  /** Fencing: only while the run is in this attempt, so a worker whose lease was taken over publishes nothing. */
  attempt?: number;
  now: number;
}

export type PublishMessageResult =
  | { kind: "published"; message: MessageRecord; checkpoint: CheckpointRecord; thread: ThreadRecord; run: RunRecord }
  /** The run is no longer running (a cancel won the race, or it is terminal): nothing was written. */
  | { kind: "rejected"; run: RunRecord | undefined };

export interface RequestCancelInput {
  tenantId: string;
  runId: string;
  reason: string;
  /** The id for the cancel checkpoint, if the cancel is accepted now. */
  checkpointId: string;
  /** The step that was in progress, as far as the caller knows. */
  pendingStep: PendingStep | null;
  now: number;
  /**
   * A live turn's interruption (DESIGN §12): what the user heard of the answer being spoken,
   * published with the cancel as an `interrupted` message. Ignored unless the run is running;
   * empty content publishes nothing.
   */
  heard?: HeardAnswer;
}

/** The part of an answer the user heard before an interruption. */
export interface HeardAnswer {
  messageId: string;
  content: string;
}

export type RequestCancelResult =
  /** Accepted now: the thread moved one version; `run.status` is `cancel_requested`, or `cancelled` for a run that never started. */
  | ({ kind: "accepted" } & AcceptedCancelRecord)
  /** A cancel was already accepted and the run has not stopped yet. */
  | { kind: "already_requested"; run: RunRecord }
  | { kind: "already_terminal"; run: RunRecord }
  | { kind: "not_found" };

export interface FinishRunInput {
  tenantId: string;
  runId: string;
  to: "completed" | "cancelled" | "failed";
  /** Only finish from one of these statuses (compare-and-set). */
  from: readonly RunStatus[];
  stats: Partial<UsageStats>;
  failureReason?: FailureReason;
  failureMessage?: string;
  /** With `to: "cancelled"`: the discarded generation, written once into the cancel checkpoint. */
  cancelledGeneration?: CancelledGeneration;
  /**
   * With `to: "cancelled"`: the step the cancel caught, as the executing worker knows it. Written
   * into the cancel checkpoint only when it names none (the cancel was accepted by a process that
   * was not executing the run), with the resume policy that follows from it.
   */
  pendingStep?: PendingStep | null;
  /** Step rows still to write (a Stop's cut steps), written in the same transaction before the run's end closes the rest. */
  steps?: readonly StepUpdate[];
  /** Fencing: only while the run is in this attempt. */
  attempt?: number;
  now: number;
}

/** A change to one step's bookkeeping row (not a thread transition: no version moves). */
export interface StepUpdate {
  stepId: string;
  status: StepStatus;
  /** Written when the row is created; later updates may omit them. */
  ordinal?: number;
  parentStepId?: string | null;
  title?: string | null;
  dependsOn?: string[];
  inputHash?: string | null;
  startedAt?: number | null;
  endedAt?: number | null;
  error?: string | null;
  /** A step a Continue carried over: its earlier run and durable record, copied by reference. */
  reusedFromRunId?: string | null;
  checkpointId?: string | null;
  messageId?: string | null;
  result?: string | null;
}

export interface SaveStepsInput {
  tenantId: string;
  runId: string;
  steps: readonly StepUpdate[];
}

/** A step's own work done without a message: its result, with a `step_completed` checkpoint. */
export interface CompleteStepInput {
  tenantId: string;
  runId: string;
  stepId: string;
  checkpointId: string;
  /** The step's result as JSON text. */
  result: string;
  /** Counts the step caused (e.g. the model call whose answer it returned), added with its checkpoint. */
  stats?: Partial<UsageStats>;
  /** Fencing: only while the run is `running` in this attempt (like a publication). */
  attempt?: number;
  now: number;
}

export type CompleteStepResult =
  | { kind: "completed"; checkpoint: CheckpointRecord; thread: ThreadRecord; step: RunStepRecord }
  /** The run is no longer running (a cancel won the race, or it is terminal): nothing was written. */
  | { kind: "rejected"; run: RunRecord | undefined };

export interface TransitionRunInput {
  tenantId: string;
  runId: string;
  from: readonly RunStatus[];
  to: RunStatus;
  activeOperation?: string | null;
  /** Fencing: only while the run is in this attempt. */
  attempt?: number;
  now: number;
}

export interface TakeOverLeaseInput {
  tenantId: string;
  runId: string;
  /** The attempt whose lease expired, as recovery listed it. */
  attempt: number;
  owner: string;
  leaseExpiresAt: number;
  now: number;
}

/**
 * Everything `tidemark check` needs to know about one thread: its own rows only. A branch's shared
 * prefix is its ancestors' rows, which the scan yields before it (see {@link Store.scanThreads}).
 */
export interface ThreadSnapshot {
  thread: ThreadRecord;
  /** The thread's own messages, in position order. */
  messages: MessageRecord[];
  /** The thread's own checkpoints, in version order. */
  checkpoints: CheckpointRecord[];
  runs: RunRecord[];
  transitions: RunTransitionRecord[];
  operations: OperationRecord[];
  /** The steps of the thread's runs, each run's in registration order. */
  steps: RunStepRecord[];
}

export interface PrepareOperationInput {
  tenantId: string;
  /** Used if a new row is made. */
  opId: string;
  threadId: string;
  runId: string;
  toolName: string;
  toolCallId: string;
  idempotencyKey: string;
  input: string;
  preview: unknown;
  /** The checkpoint "pause before a consequential operation" (a transition: version + 1). */
  checkpointId: string;
  now: number;
}

export type PrepareOperationResult =
  /** A new row, or an `abandoned`/`failed` one for the same key taken up again: phase `prepared`, checkpoint written. */
  | { kind: "prepared"; operation: OperationRecord; checkpoint: CheckpointRecord; thread: ThreadRecord }
  /** The key was already committed: reuse its result, never call the external system again. */
  | { kind: "committed"; operation: OperationRecord }
  /** The key is `prepared`/`committing`/`outcome_unknown` elsewhere, or the run is not running. */
  | { kind: "refused"; operation: OperationRecord | undefined; reason: "in_progress" | "outcome_unknown" | "run_not_running" };

export interface BeginCommitInput {
  tenantId: string;
  opId: string;
  runId: string;
  /** Fencing: only while the run is in this attempt (never hand an action over for a run another worker took). */
  attempt?: number;
  now: number;
}

export type BeginCommitResult =
  /** Handed over: phase `committing`, `commitAttempts` + 1, the run's `active_operation` set. */
  | { kind: "committing"; operation: OperationRecord }
  /** Not handed over: the run is no longer running (a cancel was accepted) or the phase is not `prepared`. */
  | { kind: "refused"; operation: OperationRecord | undefined; runStatus: RunStatus | undefined };

export interface FinishOperationInput {
  tenantId: string;
  opId: string;
  /**
   * `committed` with a result, `failed` with a safe error, or `outcome_unknown` (with a safe note)
   * when the commit outlived its bound after a Stop and nobody knows whether it happened.
   */
  phase: "committed" | "failed" | "outcome_unknown";
  result?: unknown;
  error?: string;
  now: number;
}

export interface ConfirmOperationInput {
  tenantId: string;
  threadId: string;
  opId: string;
  /** What the external system says happened. `not_committed` lets the action be prepared again. */
  outcome: "committed" | "not_committed";
  result?: unknown;
  /** The confirmation is a transition: version + 1 with this checkpoint. */
  checkpointId: string;
  now: number;
}

export interface SaveFragmentInput {
  tenantId: string;
  runId: string;
  /** The streamed message the client saw part of (its id from the run's `message.delta` events). */
  messageId: string;
  /** The checkpoint `fragment_saved` (a transition: version + 1). */
  checkpointId: string;
  /** Exactly the text the client received. */
  content: string;
  /** `json` when the streamed message was a structured step's object: the fragment is then not usable for execution. */
  format?: MessageFormat;
  now: number;
}

export type SaveFragmentResult =
  /** Written: an assistant message `fragment` of the run, its checkpoint and the thread's new version. */
  | { kind: "saved"; message: MessageRecord; checkpoint: CheckpointRecord; thread: ThreadRecord }
  | { kind: "run_not_found" }
  /** A fragment is saved only once its run's stream is final. */
  | { kind: "run_not_terminal"; run: RunRecord }
  | { kind: "thread_not_found" }
  /** Another run of the thread is active: a fragment would land in the middle of its turn. */
  | { kind: "run_in_progress"; thread: ThreadRecord }
  /** Messages of another run came after this run's: the fragment would be out of order. */
  | { kind: "thread_moved_on"; thread: ThreadRecord }
  /** A message with this id is already stored (published, a fragment, or a deleted fragment). */
  | { kind: "exists"; message: MessageRecord };

export interface DeleteMessageInput {
  tenantId: string;
  threadId: string;
  messageId: string;
  /** The checkpoint `message_deleted` (a transition: version + 1). */
  checkpointId: string;
  now: number;
}

export type DeleteMessageResult =
  /** The row stays (append-only), marked `deleted`; the thread moved one version. */
  | { kind: "deleted"; message: MessageRecord; checkpoint: CheckpointRecord; thread: ThreadRecord }
  | { kind: "thread_not_found" }
  /** Unknown, in another thread, or already deleted. */
  | { kind: "message_not_found" }
  /** Only a fragment may be deleted; a published message is part of the confirmed result. */
  | { kind: "not_deletable"; message: MessageRecord };

export interface RollbackRunInput {
  tenantId: string;
  runId: string;
  /** The checkpoint `run_rolled_back` (a transition: version + 1). */
  checkpointId: string;
  now: number;
}

export type RollbackRunResult =
  /** The run's input is marked `deleted` (the row stays), with a `run_rolled_back` checkpoint; the thread moved one version. */
  | { kind: "rolled_back"; run: RunRecord; message: MessageRecord; checkpoint: CheckpointRecord; thread: ThreadRecord }
  /** Rolled back before: the same outcome, nothing written. */
  | { kind: "already_rolled_back"; run: RunRecord; message: MessageRecord; checkpoint: CheckpointRecord; thread: ThreadRecord }
  /** Unknown or foreign run, or its thread is deleted. */
  | { kind: "run_not_found" }
  /**
   * Not a run whose turn can be taken back: it has not ended (`not_ended`), it completed
   * (`completed`: its answer is the confirmed result), or it has no published input (`no_input`:
   * a Continue, or a run cancelled while it waited).
   */
  | { kind: "not_rollbackable"; run: RunRecord; reason: "not_ended" | "completed" | "no_input" }
  /** Another run of the thread is active: its turn builds on this one. */
  | { kind: "run_in_progress"; run: RunRecord; thread: ThreadRecord }
  /** A visible message came after the run's input (its own or another's): history built on it. */
  | { kind: "thread_moved_on"; run: RunRecord; thread: ThreadRecord };

/** One batch of {@link Store.pruneExpired}. */
export interface PruneBatchInput {
  layer: RetentionLayer;
  /** Rows older than this time have expired (a trace's time, a run's end, a fragment's save, an operation's last change). */
  before: number;
  /** At most this many rows. */
  limit: number;
  /** A new id for each checkpoint an expiring fragment writes (it leaves its thread as a delete would). */
  createCheckpointId: () => string;
  now: number;
}

export type { RetentionLayer };

export interface EraseThreadInput {
  tenantId: string;
  threadId: string;
  /** The `thread_erased` checkpoint (a transition: version + 1), the thread's only one afterwards. */
  checkpointId: string;
  now: number;
}

/** What an erasure removed, by kind of row (operations: reduced, not removed). */
export interface ErasedCounts {
  messages: number;
  checkpoints: number;
  steps: number;
  traces: number;
  events: number;
  operations: number;
}

export type EraseThreadResult =
  /** Erased now: `runIds` are its runs (their in-memory event buffers go too). */
  | { kind: "erased"; thread: ThreadRecord; runIds: string[]; erased: ErasedCounts }
  /** Erased before: the same outcome, nothing written. */
  | { kind: "already_erased"; thread: ThreadRecord }
  /** Unknown or foreign. */
  | { kind: "thread_not_found" }
  /** A run of the thread has not ended: stop it (or terminate the thread) first. */
  | { kind: "run_in_progress"; runs: RunRecord[] }
  /** Branches read their shared prefix through this thread: erase them first. */
  | { kind: "has_branches"; branchIds: string[] };

/** The durable store behind threads, runs, checkpoints and traces. */
export interface Store {
  createThread(input: CreateThreadInput, options?: CallOptions): Promise<ThreadRecord>;
  /** The thread, or undefined when unknown, foreign or deleted. */
  getThread(tenantId: string, threadId: string, options?: CallOptions): Promise<ThreadRecord | undefined>;
  /**
   * The tenant's threads that are not deleted, most recently updated first (ties: the greater
   * `threadId` first). A page that starts `before` the last thread of the previous one continues
   * it without duplicates or gaps; a thread that changes meanwhile moves to the front.
   */
  listThreads(tenantId: string, options: ListThreadsOptions): Promise<ThreadRecord[]>;
  /**
   * TERMINATE in the store: marks the thread deleted and accepts a cancel of every run of it that
   * is not stopping yet, in one transaction, so no run is left behind and none is admitted after.
   */
  deleteThread(input: DeleteThreadInput, options?: CallOptions): Promise<DeleteThreadResult>;
  /** Saves the title in its own transaction, only if the thread has none yet. */
  saveTitle(tenantId: string, threadId: string, title: string, now: number, options?: CallOptions): Promise<void>;
  /** Sets the title the user chose (not a transition: the version stays); undefined when not found. */
  renameThread(tenantId: string, threadId: string, title: string, now: number, options?: CallOptions): Promise<ThreadRecord | undefined>;
  /**
   * The thread's messages in order (published, fragments and deleted drafts alike). For a branch:
   * the shared prefix as it stood at the fork point (read through, never copied), then its own.
   */
  listMessages(tenantId: string, threadId: string, options?: ListMessagesOptions): Promise<MessageRecord[]>;
  /** The thread's checkpoints, oldest first; for a branch the fork checkpoint's chain, then its own. */
  listCheckpoints(tenantId: string, threadId: string, options?: ListCheckpointsOptions): Promise<CheckpointRecord[]>;
  /**
   * The thread's messages, its operations and its recent checkpoints in one read transaction:
   * what a run's execution starts from (one lineage read and one transaction, not three).
   */
  readExecutionView(tenantId: string, threadId: string, options: ReadExecutionViewOptions): Promise<ExecutionView>;
  /** Creates a branch that shares the lineage up to a checkpoint, in one transaction, O(1) in the prefix. */
  forkThread(input: ForkThreadInput, options?: CallOptions): Promise<ForkThreadResult>;

  createRun(input: CreateRunInput, options?: CallOptions): Promise<CreateRunResult>;
  getRun(tenantId: string, runId: string, options?: CallOptions): Promise<RunRecord | undefined>;
  findRunByIdempotencyKey(tenantId: string, key: string, options?: CallOptions): Promise<RunRecord | undefined>;
  /** Runs of a thread that are not terminal. */
  listActiveRuns(tenantId: string, threadId: string, options?: CallOptions): Promise<RunRecord[]>;
  /**
   * If the thread has no active run, accepts the input of its oldest waiting run (published
   * with its checkpoint, a transition) and makes it the active run; undefined if none waits.
   */
  admitNextRun(tenantId: string, threadId: string, checkpointId: string, now: number, options?: CallOptions): Promise<RunRecord | undefined>;
  /** System-level: threads with a waiting run and no active run (their admission was lost with a process). */
  listThreadsWithWaitingRuns(options?: CallOptions): Promise<{ tenantId: string; threadId: string }[]>;
  /**
   * System-level, for operators' metrics: how many runs are queued across every tenant:
   * `unclaimed` wait for a worker to claim them, `waiting` wait behind another run of their thread.
   */
  countQueuedRuns(options?: CallOptions): Promise<QueuedRunCounts>;
  /** queued → running, taking the lease; undefined if the run was not queued. */
  claimRun(input: ClaimRunInput, options?: CallOptions): Promise<RunRecord | undefined>;
  /**
   * System-level: claims up to `limit` of the oldest queued runs nobody holds (not waiting behind
   * another run), as {@link claimRun} does each. Concurrent callers never claim the same run.
   */
  claimQueuedRuns(input: ClaimQueuedRunsInput, options?: CallOptions): Promise<RunRecord[]>;
  /** A status change that publishes nothing (e.g. running → cancelling, running → queued). */
  transitionRun(input: TransitionRunInput, options?: CallOptions): Promise<RunRecord | undefined>;
  publishMessage(input: PublishMessageInput, options?: CallOptions): Promise<PublishMessageResult>;
  requestCancel(input: RequestCancelInput, options?: CallOptions): Promise<RequestCancelResult>;
  /** Saves what the client saw of a terminal run's unpublished message, as a transition. */
  saveFragment(input: SaveFragmentInput, options?: CallOptions): Promise<SaveFragmentResult>;
  /** Marks a fragment deleted, as a transition. */
  deleteMessage(input: DeleteMessageInput, options?: CallOptions): Promise<DeleteMessageResult>;
  /**
   * Takes back a stopped run's turn: marks its input `deleted`, as a transition, only while it is
   * the thread's last visible message; a repeat returns the same outcome.
   */
  rollbackRun(input: RollbackRunInput, options?: CallOptions): Promise<RollbackRunResult>;
  /**
   * The terminal write: status, the run's own counts, the thread's counts, in one transaction; a
   * step still not terminal then ends too (`cancelled`, or `failed` for a run that failed while
   * it was in progress), so a terminal run never shows unfinished steps.
   */
  finishRun(input: FinishRunInput, options?: CallOptions): Promise<RunRecord | undefined>;

  /**
   * Upserts steps' bookkeeping rows in one transaction (nothing for an unknown run). A field an
   * update leaves out keeps its value; a row in a terminal status keeps it, with its end time and
   * error, and only fills in what it lacks; a step's checkpoint, message and result, once written,
   * stay. On a run that has ended, an update that would leave a step unfinished closes it as the
   * run's end did, so a terminal run never shows unfinished steps.
   */
  saveSteps(input: SaveStepsInput, options?: CallOptions): Promise<void>;
  /**
   * Records a step's result with its `step_completed` checkpoint, as a transition (version + 1),
   * fenced like a publication. The step's status is left to the executor (a new row is `in_progress`).
   */
  completeStep(input: CompleteStepInput, options?: CallOptions): Promise<CompleteStepResult>;
  /** A run's steps in registration order (by ordinal); none for another tenant's run. */
  listRunSteps(tenantId: string, runId: string, options?: CallOptions): Promise<RunStepRecord[]>;

  /** Gives up `owner`'s lease on a run it can no longer drive, so recovery takes it over now. */
  releaseLease(tenantId: string, runId: string, owner: string, options?: CallOptions): Promise<void>;
  /**
   * System-level: extends the leases `owner` holds on non-terminal runs (only those of `runs` when
   * given: the runs the worker still executes); the number renewed.
   */
  renewLeases(owner: string, leaseExpiresAt: number, options?: RenewLeasesOptions): Promise<number>;
  /**
   * System-level: takes the expired lease of a lost attempt for recovery, so exactly one
   * recoverer acts on it; false when the lease is live again or the attempt moved on.
   */
  takeOverLease(input: TakeOverLeaseInput, options?: CallOptions): Promise<boolean>;
  /** System-level: runs `owner` holds whose cancel was accepted (the fallback when a cancel notice is lost). */
  listCancelledRuns(owner: string, options?: CallOptions): Promise<RunRecord[]>;
  /** System-level: non-terminal runs whose lease expired, and queued runs nobody claimed since `orphanedBefore`. */
  listRecoverableRuns(now: number, orphanedBefore: number, options?: CallOptions): Promise<RunRecord[]>;

  /** Records a consequential operation before its commit (or finds its key's earlier outcome). */
  prepareOperation(input: PrepareOperationInput, options?: CallOptions): Promise<PrepareOperationResult>;
  /** prepared → committing, only while the run is `running` (never after a cancel was accepted). */
  beginCommit(input: BeginCommitInput, options?: CallOptions): Promise<BeginCommitResult>;
  /** committing → committed | failed | outcome_unknown; clears the run's `active_operation`. */
  finishOperation(input: FinishOperationInput, options?: CallOptions): Promise<OperationRecord | undefined>;
  /** prepared → abandoned (a Stop or a rejection before the commit). */
  abandonOperation(input: { tenantId: string; opId: string; now: number }, options?: CallOptions): Promise<OperationRecord | undefined>;
  /** System-level: every `committing` operation of a lost run → `outcome_unknown`. */
  markOutcomesUnknown(tenantId: string, runId: string, now: number, options?: CallOptions): Promise<OperationRecord[]>;
  /** outcome_unknown → committed | abandoned (not_committed), as a thread transition. */
  confirmOperation(input: ConfirmOperationInput, options?: CallOptions): Promise<OperationRecord | undefined>;
  getOperation(tenantId: string, opId: string, options?: CallOptions): Promise<OperationRecord | undefined>;
  /** The thread's operations, oldest first; a branch also sees those of the runs in its shared prefix. */
  listOperations(tenantId: string, threadId: string, options?: CallOptions): Promise<OperationRecord[]>;

  /**
   * Erases a thread (active or deleted) in one transaction: its messages, checkpoints, steps,
   * traces and events are deleted, its runs keep only statuses, stats and transitions, its
   * operations are reduced; the thread row stays `erased` with a `thread_erased` checkpoint.
   */
  eraseThread(input: EraseThreadInput, options?: CallOptions): Promise<EraseThreadResult>;
  /** System-level: a tenant's thread ids not erased yet, each branch before its parent. */
  listErasableThreads(tenantId: string, options?: CallOptions): Promise<string[]>;

  /** System-level: how many rows of `layer` expired before `before` and are not pruned yet (a dry run's count). */
  countExpired(layer: RetentionLayer, before: number, options?: CallOptions): Promise<number>;
  /**
   * System-level: prunes up to `limit` of the oldest expired rows of one layer, in short
   * transactions; how many it pruned (fewer than `limit`: none left, or some wait for a later
   * batch, e.g. a fragment on a thread whose run is active).
   */
  pruneExpired(input: PruneBatchInput, options?: CallOptions): Promise<number>;

  appendTrace(trace: TraceRecord, options?: CallOptions): Promise<void>;
  listTraces(tenantId: string, runId: string, options?: CallOptions): Promise<TraceRecord[]>;

  /**
   * System-level: every thread with its own rows, for `tidemark check`, deleted ones too. Each
   * branch comes after its parent, depth first (a thread's whole subtree before the next root), and
   * a thread's branches latest fork point first, so the checker keeps only the current chain of
   * ancestors and reuses it; a thread whose parent is missing comes after the rest. Each snapshot is
   * read in one transaction.
   */
  scanThreads(options?: CallOptions): AsyncIterable<ThreadSnapshot>;
  close(): Promise<void>;
}
