import type { Clock, OperationRecord, PendingStep, RunEventDraft, RunRecord, TraceRecord } from "../core/index.js";
import type { Tool } from "../tools/tool.js";
import type { Store } from "../store/index.js";
import type { CancelScope } from "./cancel-scope.js";
import type { Logger } from "../core/logger.js";
import type { ChatModel } from "../core/model.js";

/** Generation that was started and then not published (cancelled or failed mid-stream). */
export interface DiscardedGeneration {
  llmCalls: number;
  streamChars: number;
  outputTokens: number;
  inputTokens: number;
  isEstimated: boolean;
}

/**
 * Why a run's scope was cancelled. A cancel aborts the work first and is recorded by the store
 * in the same breath; `recorded` says whether the store accepted it, and the executor settles
 * only once it knows.
 */
export type StopCause = { kind: "cancel"; reason: string; recorded: Promise<boolean> } | { kind: "shutdown" };

/** One run being executed in this process: what its steps and its cancel path share. */
export interface RunExecution {
  /** The run as last claimed; the same object is shared with the cancel path, never copied. */
  run: RunRecord;
  readonly store: Store;
  readonly model: ChatModel;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly scope: CancelScope;
  /** Appends an event to the run's stream. */
  emit(draft: RunEventDraft): void;
  /** Records a cancel through the store, as a Stop would (e.g. when the provider cancelled). */
  requestCancel(reason: string): Promise<void>;
  /** Records a trace entry in the background. */
  trace(kind: string, data: Record<string, unknown>): void;
  /** The step in progress, so an accepted cancel can name it in its checkpoint. */
  activeStep: PendingStep | null;
  /** The tools the model may call, by name. */
  readonly tools: ReadonlyMap<string, Tool>;
  /** The consequential operation in progress, so a cancel can say what is still finishing. */
  activeOperation: { opId: string; toolName: string; phase: "prepared" | "awaiting_approval" | "committing" } | null;
  /** Pauses the run (`interrupted`) until the user approves or rejects `operation`; rejects on Stop. */
  awaitApproval(operation: OperationRecord, signal: AbortSignal): Promise<"approved" | "rejected">;
  /** Set when the scope is cancelled, so the executor can tell a Stop from a shutdown. */
  stopCause: StopCause | null;
  readonly discarded: DiscardedGeneration;
}

/** A trace record for `run`. */
export function traceFor(run: RunRecord, traceId: string, kind: string, data: Record<string, unknown>, at: number): TraceRecord {
  return { tenantId: run.tenantId, traceId, runId: run.runId, threadId: run.threadId, kind, data, at };
}
