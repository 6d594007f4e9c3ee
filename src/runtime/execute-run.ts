import {
  isTerminalStatus,
  type ExternalEffect,
  type MessageToolCall,
  type OperationPhase,
  type OperationRecord,
  type RunRecord,
  type UsageStats,
} from "../core/index.js";
import { CANCELLED_BEFORE_EXECUTION } from "./model-context.js";
import type { ModelMessage } from "../core/model.js";
import { buildModelContext, createChatProgram, ModelFailedError, PublicationRejectedError } from "./chat-program.js";
import { ModelError } from "../core/model-error.js";
import { confirmUnknownOperations } from "./operation-confirmation.js";
import { runPlan } from "./plan.js";
import type { RunExecution } from "./run-execution.js";

/** How a run's execution ended, for the caller's metrics. */
export type ExecutionOutcome = "completed" | "cancelled" | "failed" | "handed_back" | "superseded";

/**
 * Executes a claimed run to its end. The store's status is the authority: whatever the plan
 * reports, the terminal write is a compare-and-set, so a completion that raced an accepted
 * cancel can never publish, and a cancel is reported only once the work has stopped.
 */
export async function executeRun(execution: RunExecution): Promise<ExecutionOutcome> {
  const { run, store, scope } = execution;
  let planError: unknown;
  try {
    // A later attempt follows a lost one, which may have left an action's outcome unknown: ask the
    // tools first, so the model is told what happened (a new run did so when it was created).
    if (run.attempt > 1) await confirmUnknownOperations(execution, run.tenantId, run.threadId);
    const messages = await store.listMessages(run.tenantId, run.threadId);
    const operations = await store.listOperations(run.tenantId, run.threadId);
    const context = buildModelContext(messages, { outcomeFor: outcomeFromLedger(operations) });
    await noteStoppedResponse(execution, context);
    const result = await runPlan(createChatProgram(execution, context), { scope, concurrency: 4 });
    planError = result.error;
  } catch (error) {
    planError = error;
  }
  // A cancel stops the work before the store records it: settle only once it is decided.
  if (execution.stopCause?.kind === "cancel") await execution.stopCause.recorded;
  const current = await store.getRun(run.tenantId, run.runId);
  if (!current) return "failed";
  return settle(execution, current, planError);
}

async function settle(execution: RunExecution, initial: RunRecord, planError: unknown): Promise<ExecutionOutcome> {
  const { run, store, clock } = execution;
  const now = clock.now();
  let current = initial;

  if (current.attempt !== run.attempt) {
    // Recovery gave the run to a new attempt (this worker's lease had expired): it is that
    // attempt's to settle, and this one writes nothing.
    execution.trace("execution_superseded", { attempt: run.attempt, current_attempt: current.attempt, status: current.status });
    return "superseded";
  }

  if (current.status === "running" && isProviderCancel(planError) && execution.stopCause === null) {
    // An HTTP 499 means the provider cancelled: record it as a cancel, never as a failure.
    await execution.requestCancel("provider_cancelled");
    const reread = await store.getRun(run.tenantId, run.runId);
    if (reread) current = reread;
  }

  if (current.status === "running" && planError === undefined && execution.stopCause === null) {
    // Every step is done (e.g. the model-step limit was reached after tool results): complete.
    const completed = await store.finishRun({ tenantId: run.tenantId, runId: run.runId, attempt: run.attempt, to: "completed", from: ["running"], stats: {}, now });
    if (completed) {
      emitTerminal(execution, completed, 0);
      return "completed";
    }
    current = (await store.getRun(run.tenantId, run.runId)) ?? current;
  }

  if (current.status === "completed") {
    execution.emit({
      type: "run.completed",
      run_id: run.runId,
      state_version: current.stateVersion,
      published_message_id: current.publishedMessageId,
    });
    return "completed";
  }

  if (current.status === "cancel_requested" || current.status === "cancelling") {
    const discarded = discardedStats(execution);
    const finished = await store.finishRun({
      tenantId: run.tenantId,
      runId: run.runId,
      attempt: run.attempt,
      to: "cancelled",
      from: ["cancel_requested", "cancelling"],
      stats: discarded,
      cancelledGeneration: {
        discardedStreamChars: discarded.discardedStreamChars ?? 0,
        discardedOutputTokens: discarded.discardedOutputTokens ?? 0,
        tokensEstimated: discarded.tokensEstimated ?? false,
      },
      // Where the cancel was accepted by a process that does not execute the run, only this one knows the step.
      pendingStep: execution.activeStep,
      now,
    });
    if (discarded.discardedStreamChars) {
      execution.trace("generation_discarded", {
        discarded_stream_chars: discarded.discardedStreamChars,
        discarded_output_tokens: discarded.discardedOutputTokens,
        tokens_estimated: discarded.tokensEstimated,
      });
    }
    const final = finished ?? (await store.getRun(run.tenantId, run.runId))!;
    emitTerminal(execution, final, discarded.discardedStreamChars ?? 0, await externalEffects(execution, final));
    return "cancelled";
  }

  if ((current.status === "running" || current.status === "interrupted") && execution.stopCause?.kind === "shutdown") {
    // A purposeful stop (the worker drains) is not a failure: the run goes back to the queue for another worker.
    await store.transitionRun({ tenantId: run.tenantId, runId: run.runId, attempt: run.attempt, from: [current.status], to: "queued", now });
    execution.trace("handed_back", { reason: "worker_draining" });
    return "handed_back";
  }

  if (current.status === "running") {
    // The work was stopped for a cancel the store could not record: a failure, never "cancelled".
    const isCancelNotRecorded = execution.stopCause?.kind === "cancel";
    if (execution.stopCause?.kind === "cancel") execution.trace("cancel_not_recorded", { reason: execution.stopCause.reason });
    const isProviderError = ModelFailedError.isInstance(planError) && !isCancelNotRecorded;
    const modelError = isProviderError && ModelError.isInstance(planError.cause) ? planError.cause : undefined;
    const finished = await store.finishRun({
      tenantId: run.tenantId,
      runId: run.runId,
      attempt: run.attempt,
      to: "failed",
      from: ["running"],
      stats: discardedStats(execution),
      failureReason: isProviderError ? "provider_error" : "error",
      // ModelError messages are written to be safe (no key, no upstream body).
      failureMessage: isCancelNotRecorded
        ? CANCEL_NOT_RECORDED_MESSAGE
        : (modelError?.message ?? (isProviderError ? "The model failed while generating." : "The run failed.")),
      now,
    });
    execution.trace("run_failed", { error: describe(planError) });
    const final = finished ?? (await store.getRun(run.tenantId, run.runId))!;
    if (finished) logRunFailure(execution.logger, finished, describe(planError));
    emitTerminal(execution, final, 0);
    return "failed";
  }

  // Already terminal through another path (e.g. recovery): report it, publish nothing.
  if (isTerminalStatus(current.status)) {
    if (!PublicationRejectedError.isInstance(planError)) execution.trace("execution_ended_late", { status: current.status });
    emitTerminal(execution, current, 0);
    return current.status;
  }
  execution.logger.warn({ run_id: run.runId, status: current.status }, "run left in a non-terminal status");
  return "failed";
}

/**
 * Logs a run's failure once, where it is decided, with the cause for the operator (a warning:
 * a failing provider is the deployment's weather, not the server's fault).
 */
export function logRunFailure(logger: RunExecution["logger"], run: RunRecord, cause: string): void {
  logger.warn(
    { run_id: run.runId, thread_id: run.threadId, tenant_id: run.tenantId, reason: run.failureReason, message: run.failureMessage, cause },
    "run failed",
  );
}

/** What a run whose Stop stopped the work but could not be recorded says when it fails. */
export const CANCEL_NOT_RECORDED_MESSAGE =
  "The run was stopped, but the Stop could not be recorded, so it ends as failed; nothing after the Stop was published.";

/** The counts of generation that was started and not published. */
function discardedStats(execution: RunExecution): Partial<UsageStats> {
  const { discarded } = execution;
  if (discarded.llmCalls === 0) return {};
  // The provider's own figure when it sent one before the stop, else an estimate, flagged.
  const isEstimated = discarded.outputTokens > 0 ? discarded.isEstimated : true;
  const outputTokens = discarded.outputTokens || Math.ceil(discarded.streamChars / 4);
  return {
    llmCallCount: discarded.llmCalls,
    inputTokens: discarded.inputTokens,
    outputTokens,
    tokensEstimated: isEstimated,
    discardedGenerationCount: 1,
    discardedStreamChars: discarded.streamChars,
    discardedOutputTokens: outputTokens,
  };
}

/** Emits the terminal event matching `run`'s terminal status. */
export function emitTerminal(
  execution: Pick<RunExecution, "emit">,
  run: RunRecord,
  discardedStreamChars: number,
  effects: ExternalEffect[] = [],
): void {
  if (run.status === "completed") {
    execution.emit({
      type: "run.completed",
      run_id: run.runId,
      state_version: run.stateVersion,
      published_message_id: run.publishedMessageId,
    });
  } else if (run.status === "cancelled") {
    execution.emit({
      type: "run.cancelled",
      run_id: run.runId,
      reason: run.cancelReason ?? "cancelled",
      resume_checkpoint_id: run.cancelCheckpointId,
      discarded_stream_chars: discardedStreamChars,
      external_effects: effects,
    });
  } else if (run.status === "failed") {
    execution.emit({
      type: "run.failed",
      run_id: run.runId,
      reason: run.failureReason ?? "error",
      message: run.failureMessage ?? "The run failed.",
    });
  }
}

/** Tells the model, right before the new input, that its previous response was stopped (policy `regenerate_pending_step`). */
export const STOPPED_RESPONSE_NOTE =
  "The user stopped your previous response before it finished; what you had written was discarded. Answer the next message afresh.";

async function noteStoppedResponse(execution: RunExecution, context: ModelMessage[]): Promise<void> {
  const { run, store } = execution;
  const checkpoints = new Map((await store.listCheckpoints(run.tenantId, run.threadId)).map((checkpoint) => [checkpoint.checkpointId, checkpoint]));
  // A fragment saved or deleted after the Stop, or a branch made from it, does not change what the model must be told.
  let base = checkpoints.get(run.baseCheckpointId);
  while (base && (base.kind === "fragment_saved" || base.kind === "message_deleted" || base.kind === "fork_created") && base.parentCheckpointId) {
    base = checkpoints.get(base.parentCheckpointId);
  }
  // Only a cancel that caught a step in progress interrupted a response (not one of a run that never started).
  if (base?.kind !== "cancel_accepted" || base.pendingStep === null) return;
  const inputAt = context.findLastIndex((message) => message.role === "user");
  // The discarded text itself is never glued on: it was never kept.
  context.splice(inputAt < 0 ? context.length : inputAt, 0, { role: "system", content: STOPPED_RESPONSE_NOTE });
}

/** What this run handed to external systems, from the ledger: the truth for `run.cancelled`. */
export async function externalEffects(execution: Pick<RunExecution, "store">, run: RunRecord): Promise<ExternalEffect[]> {
  const operations = await execution.store.listOperations(run.tenantId, run.threadId);
  return operations
    .filter((operation) => operation.runId === run.runId && HANDED_OVER.includes(operation.phase))
    .map((operation) => ({ op_id: operation.opId, tool: operation.toolName, phase: operation.phase }));
}

const HANDED_OVER: readonly OperationPhase[] = ["committing", "committed", "failed", "outcome_unknown"];

/** The synthetic result for a tool call without a result message, as the ledger knows it. */
function outcomeFromLedger(operations: readonly OperationRecord[]): (call: MessageToolCall) => string {
  const byCall = new Map(operations.map((operation) => [operation.toolCallId, operation]));
  return (call) => {
    const operation = byCall.get(call.toolCallId);
    switch (operation?.phase) {
      case "committed":
        return `[committed before the stop] ${JSON.stringify(operation.result)}`;
      case "outcome_unknown":
      case "committing":
        return `[outcome unknown] ${call.toolName} was handed to the external system, but its result was not recorded. Do not repeat it until it is confirmed.`;
      case "failed":
        return `[failed] ${operation.error ?? "the external system refused it"}`;
      default:
        return CANCELLED_BEFORE_EXECUTION;
    }
  };
}

function isProviderCancel(error: unknown): boolean {
  return ModelFailedError.isInstance(error) && ModelError.isInstance(error.cause) && error.cause.kind === "cancelled";
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}${error.cause ? ` (cause: ${describe(error.cause)})` : ""}`;
  return String(error);
}
