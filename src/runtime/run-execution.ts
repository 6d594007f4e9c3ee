import type { Clock, OperationRecord, PendingStep, RunEventDraft, RunRecord, TraceRecord } from "../core/index.js";
import type { Tool } from "../tools/tool.js";
import type { Store } from "../store/index.js";
import type { CancelScope } from "./cancel-scope.js";
import type { RunStop } from "./run-stop.js";
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
  /** The run's stop: written by the cancel path, the cluster worker and a drain; read when settling. */
  readonly stop: RunStop;
  readonly discarded: DiscardedGeneration;
}

/** A trace record for `run`. */
export function traceFor(run: RunRecord, traceId: string, kind: string, data: Record<string, unknown>, at: number): TraceRecord {
  return { tenantId: run.tenantId, traceId, runId: run.runId, threadId: run.threadId, kind, data, at };
}
