import type { FailureReason, RunStatus } from "./run-status.js";

/** Counts kept per thread and per run (DESIGN §10). */
export interface UsageStats {
  /** Messages published (user input included). */
  messageCount: number;
  /** Model calls started, whether they completed or were discarded. */
  llmCallCount: number;
  toolCallCount: number;
  inputTokens: number;
  outputTokens: number;
  /** True when any token figure above is an estimate rather than the provider's own. */
  tokensEstimated: boolean;
  /** Generations started and then discarded by a cancel. */
  discardedGenerationCount: number;
  discardedStreamChars: number;
  /** Output tokens generated and then discarded by a cancel. */
  discardedOutputTokens: number;
}

/** All-zero statistics. */
export function emptyStats(): UsageStats {
  return {
    messageCount: 0,
    llmCallCount: 0,
    toolCallCount: 0,
    inputTokens: 0,
    outputTokens: 0,
    tokensEstimated: false,
    discardedGenerationCount: 0,
    discardedStreamChars: 0,
    discardedOutputTokens: 0,
  };
}

/** `a + b`, field by field. */
export function addStats(a: UsageStats, b: Partial<UsageStats>): UsageStats {
  return {
    messageCount: a.messageCount + (b.messageCount ?? 0),
    llmCallCount: a.llmCallCount + (b.llmCallCount ?? 0),
    toolCallCount: a.toolCallCount + (b.toolCallCount ?? 0),
    inputTokens: a.inputTokens + (b.inputTokens ?? 0),
    outputTokens: a.outputTokens + (b.outputTokens ?? 0),
    tokensEstimated: a.tokensEstimated || (b.tokensEstimated ?? false),
    discardedGenerationCount: a.discardedGenerationCount + (b.discardedGenerationCount ?? 0),
    discardedStreamChars: a.discardedStreamChars + (b.discardedStreamChars ?? 0),
    discardedOutputTokens: a.discardedOutputTokens + (b.discardedOutputTokens ?? 0),
  };
}

/** A conversation. `stateVersion` moves by exactly one per committed transition. */
export interface ThreadRecord {
  tenantId: string;
  threadId: string;
  /** `erased`: its text is gone (docs/data/lifetimes.md); like `deleted`, it answers 404. */
  status: "active" | "deleted" | "erased";
  stateVersion: number;
  headCheckpointId: string;
  activeRunId: string | null;
  title: string | null;
  metadata: Record<string, unknown>;
  /** Its own work only: a branch starts at zero, whatever its shared prefix did. */
  stats: UsageStats;
  /** Where a branch was forked from; null for a thread created from nothing. */
  forkedFrom: ForkPoint | null;
  createdAt: number;
  updatedAt: number;
}

/**
 * A branch's fork point (DESIGN §9): the branch shares its parent's history up to and including
 * `stateVersion`, without a copy; its own checkpoints start at `stateVersion + 1`.
 */
export interface ForkPoint {
  /** The thread that owns the fork checkpoint (for a fork from an inherited checkpoint, an ancestor). */
  threadId: string;
  checkpointId: string;
  stateVersion: number;
}

/** Who wrote a message. */
export type MessageRole = "user" | "assistant" | "system" | "tool";

/**
 * What a message's content is: prose, or one JSON object a structured step produced (published
 * only complete and valid; a fragment of one is never usable for execution).
 */
export type MessageFormat = "text" | "json";

/** How a message stands in the visible result. */
export type PublicationStatus = "published" | "fragment" | "deleted";

/** One entry of the visible result; append-only. */
export interface MessageRecord {
  tenantId: string;
  messageId: string;
  threadId: string;
  /** 0-based order within the thread. */
  position: number;
  role: MessageRole;
  content: string;
  runId: string | null;
  stateVersion: number;
  checkpointId: string;
  publicationStatus: PublicationStatus;
  /** An assistant message's tool calls (`input` is JSON text). */
  toolCalls: MessageToolCall[] | null;
  /** A tool message: the call it answers. */
  toolCallId: string | null;
  toolName: string | null;
  /** A labelled block (e.g. one subtask's finished section of a plan): its label; null for a plain message. */
  label: string | null;
  /**
   * A live turn cut by an interruption (DESIGN §12): the content is exactly what the user heard of
   * the answer, published with the cancel; the unheard rest was discarded.
   */
  interrupted: boolean;
  /** `json` for a structured step's object (or a fragment of one); `text` otherwise. */
  format: MessageFormat;
  createdAt: number;
}

/** A tool call as kept in history. */
export interface MessageToolCall {
  toolCallId: string;
  toolName: string;
  input: string;
}

/** What decision a checkpoint records (DESIGN §5). */
export type CheckpointKind =
  | "thread_created"
  | "input_accepted"
  | "message_published"
  | "step_completed"
  | "cancel_accepted"
  | "operation_prepared"
  | "operation_confirmed"
  | "resume_accepted"
  /** The client saved what it saw of a stopped answer (DESIGN §9). */
  | "fragment_saved"
  /** A fragment was deleted (the row stays, marked deleted). */
  | "message_deleted"
  /**
   * A stopped run's turn was taken back (LangGraph's `rollback`): its input leaves the visible
   * result (the row stays, marked deleted); `runId` is the run, `messageId` its input.
   */
  | "run_rolled_back"
  /** A branch's first checkpoint; its parent is the fork checkpoint, in the parent's lineage. */
  | "fork_created"
  /**
   * The thread was erased (docs/data/lifetimes.md): its only checkpoint afterwards, one version
   * past the last; every other checkpoint, message and step of it is gone.
   */
  | "thread_erased";

/** How a continuation from a checkpoint treats the work it names (DESIGN §5). */
export type ResumePolicy = "regenerate_pending_step" | "reuse_tool_result" | "confirm_operation_first";

/** The step a checkpoint leaves to be done, identified by a hash of its input. */
export interface PendingStep {
  stepId: string;
  kind: "model" | "tool";
  inputHash: string;
}

/** Facts about a generation that a cancel discarded. */
export interface CancelledGeneration {
  discardedStreamChars: number;
  discardedOutputTokens: number;
  tokensEstimated: boolean;
  /** The result sets steps were collecting when the Stop came: what the user had been shown (issue 19). */
  confirmedResults?: ConfirmedResults[];
}

/**
 * The results a collecting step (`step.collect`) had shown when a Stop came: the confirmed set.
 * Results that arrived after the Stop are only counted; a Continue repeats the step and says how
 * its new set differs from this one (`results.updated`), never adding to it silently.
 */
export interface ConfirmedResults {
  stepId: string;
  /** The ids of the results shown before the Stop, in order. */
  resultIds: string[];
  /** Whether the collection had ended before the Stop (the set was whole). */
  isComplete: boolean;
  /** Results that arrived after the Stop: discarded, never shown, never in any context. */
  arrivedAfterStop: number;
}

/** One confirmed decision, pointing at its parent; O(1) in size whatever the thread's length. */
export interface CheckpointRecord {
  tenantId: string;
  checkpointId: string;
  threadId: string;
  parentCheckpointId: string | null;
  stateVersion: number;
  kind: CheckpointKind;
  runId: string | null;
  /** The message this checkpoint published, if any (by reference, never copied). */
  messageId: string | null;
  /** The step this checkpoint completed, if any. */
  completedStepId: string | null;
  pendingStep: PendingStep | null;
  resumePolicy: ResumePolicy | null;
  /** Filled once, when the worker has actually stopped after a cancel. */
  cancelledGeneration: CancelledGeneration | null;
  createdAt: number;
}

/** What to do with a run whose worker was lost (DESIGN §14). */
export type RecoveryPolicy = "fail" | "resume";

/** A run's input: one user message. */
export interface RunInput {
  role: "user";
  content: string;
}

/** One execution attempt on a thread. */
export interface RunRecord {
  tenantId: string;
  runId: string;
  threadId: string;
  status: RunStatus;
  /** 1 for the first execution; a recovered run that resumes counts up. */
  attempt: number;
  /** The checkpoint the run continues from (its input's checkpoint is a child of it). */
  baseCheckpointId: string;
  /** The user's new message; null for a run that continues from a Stop without one. */
  input: RunInput | null;
  inputMessageId: string | null;
  idempotencyKey: string | null;
  /** Hash of the create request, so a reused key with another body is refused. */
  requestHash: string;
  model: string;
  /** The agent that executes the run (DESIGN §11; default `chat`). */
  agent: string;
  /** The run's agent config as JSON text, validated by the agent's schema; null for none. */
  config: string | null;
  /** A system instruction for this run only: put before the context of each of its model requests, never published. */
  instructions: string | null;
  /** The client's own key/value notes about the run (stored, returned, never read by the runtime). */
  metadata: Record<string, unknown>;
  onDisconnect: "continue" | "cancel";
  recoveryPolicy: RecoveryPolicy;
  /** The thread version after this run's last committed transition. */
  stateVersion: number;
  cancelRequestedAt: number | null;
  cancelReason: string | null;
  /** The thread version and checkpoint at which the cancel was accepted. */
  cancelStateVersion: number | null;
  cancelCheckpointId: string | null;
  publishedMessageId: string | null;
  activeOperation: string | null;
  failureReason: FailureReason | null;
  /** A safe, client-facing failure message. */
  failureMessage: string | null;
  stats: UsageStats;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  /** Enqueued on a busy thread: its input is accepted only when the run before it ends. */
  isWaiting: boolean;
  createdAt: number;
  startedAt: number | null;
  endedAt: number | null;
  /**
   * When the finished run's execution detail (its steps, instructions and config) expired; its
   * status, stats and transitions stay. Absent or null: all of it is kept.
   */
  detailExpiredAt?: number | null;
}

/** Where a step of a run is in its life (DESIGN §11); `completed`, `failed` and `cancelled` are terminal. */
export type StepStatus = "not_started" | "in_progress" | "children_in_progress" | "completed" | "failed" | "cancelled";

/** The terminal step statuses: a step never leaves one. */
export const TERMINAL_STEP_STATUSES: readonly StepStatus[] = ["completed", "failed", "cancelled"];

/**
 * One step of a run's plan (DESIGN §11). Its status is the executor's bookkeeping; its completion is
 * durable only through `checkpointId`: the publication or the `step_completed` checkpoint that
 * recorded the step's own work, in one transaction with `result` / `messageId`.
 */
export interface RunStepRecord {
  tenantId: string;
  runId: string;
  threadId: string;
  stepId: string;
  /** 0-based order of registration within the run, for a stable listing. */
  ordinal: number;
  /** The step that added this one while it ran (e.g. a model step its tool calls), if any. */
  parentStepId: string | null;
  title: string | null;
  dependsOn: string[];
  status: StepStatus;
  /** Hash of the step's declared input: a Continue reuses a completed step only for the same input. */
  inputHash: string | null;
  startedAt: number | null;
  endedAt: number | null;
  /** The checkpoint that made the step's own work durable; null until then. */
  checkpointId: string | null;
  /** The message the step published as its result, if it published one (by reference). */
  messageId: string | null;
  /** The step's result as JSON text, for a step that completed without publishing a message. */
  result: string | null;
  /** Set when a Continue carried this step's result over from an earlier run instead of running it. */
  reusedFromRunId: string | null;
  /** A failed or cancelled step's reason, short and safe to show. */
  error: string | null;
}

/** One recorded status change of a run, for `tidemark check` (invariant 6). */
export interface RunTransitionRecord {
  tenantId: string;
  runId: string;
  /** 1-based order among this run's transitions. */
  ordinal: number;
  from: RunStatus | null;
  to: RunStatus;
  at: number;
}

/** An execution trace entry: kept apart from the result, with its own retention (DESIGN §1). */
export interface TraceRecord {
  tenantId: string;
  traceId: string;
  runId: string | null;
  threadId: string | null;
  kind: string;
  data: Record<string, unknown>;
  at: number;
}

/** What running a tool does to the world (DESIGN §6). */
export type ToolEffect = "none" | "idempotent" | "consequential";

/** Where an external operation is (DESIGN §6). `committed`, `failed` and `abandoned` are final for an attempt. */
export const OPERATION_PHASES = ["prepared", "committing", "committed", "failed", "abandoned", "outcome_unknown"] as const;
export type OperationPhase = (typeof OPERATION_PHASES)[number];

/** One external side effect, keyed by its business idempotency key: the operation ledger's row. */
export interface OperationRecord {
  tenantId: string;
  opId: string;
  threadId: string;
  /** The run that prepared it most recently. */
  runId: string;
  toolName: string;
  toolCallId: string;
  /** Names the business action (`quote:483:revision:7:send`), not the attempt; unique per tenant. */
  idempotencyKey: string;
  phase: OperationPhase;
  /** The tool input, JSON text. */
  input: string;
  /** What `prepare` returned, shown for approval. */
  preview: unknown;
  /** What the external system answered (committed), JSON-able. */
  result: unknown;
  /** A safe error message (failed). */
  error: string | null;
  /** How many times a commit was handed to the external system (invariant 2: at most 1). */
  commitAttempts: number;
  createdAt: number;
  updatedAt: number;
  /**
   * When the row was reduced past its retention (docs/data/lifetimes.md): its key is then the
   * key's hash ({@link hashIdempotencyKey}), its input, preview, result and error are gone, and
   * only its phase and {@link resultKind} say what happened. Absent or null: the full row.
   */
  reducedAt?: number | null;
  /** A reduced committed operation's result type (`object`, `string`, `null`, …), in place of the result. */
  resultKind?: string | null;
}
