/** Records → the fixed snake_case wire shapes of DESIGN §8. */
import {
  isUsableForExecution,
  statsView,
  type CheckpointRecord,
  type MessageRecord,
  type OperationRecord,
  type RunRecord,
  type RunStepRecord,
  type ThreadRecord,
} from "../core/index.js";
import type { AgentDescription } from "../agents/index.js";

export { statsView };

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function threadView(thread: ThreadRecord) {
  return {
    thread_id: thread.threadId,
    state_version: thread.stateVersion,
    status: thread.activeRunId === null ? ("idle" as const) : ("busy" as const),
    head_checkpoint_id: thread.headCheckpointId,
    active_run_id: thread.activeRunId,
    title: thread.title,
    metadata: thread.metadata,
    stats: statsView(thread.stats),
    forked_from: thread.forkedFrom
      ? { thread_id: thread.forkedFrom.threadId, checkpoint_id: thread.forkedFrom.checkpointId, state_version: thread.forkedFrom.stateVersion }
      : null,
    created_at: iso(thread.createdAt)!,
    updated_at: iso(thread.updatedAt)!,
  };
}

export function runView(run: RunRecord) {
  return {
    run_id: run.runId,
    thread_id: run.threadId,
    status: run.status,
    state_version: run.stateVersion,
    attempt: run.attempt,
    model: run.model,
    agent: run.agent,
    config: run.config === null ? null : (JSON.parse(run.config) as unknown),
    base_checkpoint_id: run.baseCheckpointId,
    input_message_id: run.inputMessageId,
    cancel_requested_at: iso(run.cancelRequestedAt),
    cancel_reason: run.cancelReason,
    resume_checkpoint_id: run.cancelCheckpointId,
    published_message_id: run.publishedMessageId,
    active_operation: run.activeOperation,
    failure_reason: run.failureReason,
    failure_message: run.failureMessage,
    on_disconnect: run.onDisconnect,
    recovery_policy: run.recoveryPolicy,
    stats: statsView(run.stats),
    created_at: iso(run.createdAt)!,
    started_at: iso(run.startedAt),
    ended_at: iso(run.endedAt),
    events_url: eventsUrl(run.runId),
  };
}

export function messageView(message: MessageRecord) {
  return {
    message_id: message.messageId,
    role: message.role,
    content: message.content,
    run_id: message.runId,
    state_version: message.stateVersion,
    checkpoint_id: message.checkpointId,
    publication_status: message.publicationStatus,
    tool_calls: message.toolCalls?.map((call) => ({ tool_call_id: call.toolCallId, tool_name: call.toolName, input: call.input })) ?? null,
    tool_call_id: message.toolCallId,
    tool_name: message.toolName,
    label: message.label,
    interrupted: message.interrupted,
    format: message.format,
    usable_for_execution: isUsableForExecution(message),
    position: message.position,
    created_at: iso(message.createdAt)!,
  };
}

export function checkpointView(checkpoint: CheckpointRecord) {
  return {
    checkpoint_id: checkpoint.checkpointId,
    parent_checkpoint_id: checkpoint.parentCheckpointId,
    state_version: checkpoint.stateVersion,
    kind: checkpoint.kind,
    run_id: checkpoint.runId,
    message_id: checkpoint.messageId,
    completed_step_id: checkpoint.completedStepId,
    pending_step: checkpoint.pendingStep
      ? { step_id: checkpoint.pendingStep.stepId, kind: checkpoint.pendingStep.kind, input_hash: checkpoint.pendingStep.inputHash }
      : null,
    resume_policy: checkpoint.resumePolicy,
    cancelled_generation: checkpoint.cancelledGeneration
      ? {
          discarded_stream_chars: checkpoint.cancelledGeneration.discardedStreamChars,
          discarded_output_tokens: checkpoint.cancelledGeneration.discardedOutputTokens,
          tokens_estimated: checkpoint.cancelledGeneration.tokensEstimated,
          confirmed_results: (checkpoint.cancelledGeneration.confirmedResults ?? []).map((set) => ({
            step_id: set.stepId,
            result_ids: set.resultIds,
            is_complete: set.isComplete,
            arrived_after_stop: set.arrivedAfterStop,
          })),
        }
      : null,
    created_at: iso(checkpoint.createdAt)!,
  };
}

export const eventsUrl = (runId: string): string => `/v1/runs/${runId}/events`;
export const historyUrl = (threadId: string): string => `/v1/threads/${threadId}/history`;

/** Where the user confirms an operation whose outcome is unknown. */
export const confirmUrl = (threadId: string, opId: string): string => `/v1/threads/${threadId}/operations/${opId}/confirm`;

export function operationView(operation: OperationRecord) {
  return {
    op_id: operation.opId,
    tool: operation.toolName,
    tool_call_id: operation.toolCallId,
    idempotency_key: operation.idempotencyKey,
    phase: operation.phase,
    run_id: operation.runId,
    input: operation.input,
    preview: operation.preview,
    result: operation.result,
    error: operation.error,
    commit_attempts: operation.commitAttempts,
    created_at: iso(operation.createdAt)!,
    updated_at: iso(operation.updatedAt)!,
    // Past its retention the row keeps a hashed key and its outcome only (docs/data/lifetimes.md).
    reduced_at: iso(operation.reducedAt ?? null),
    result_kind: operation.resultKind ?? null,
  };
}

/**
 * What a client must show beside the messages so that it offers only actions the server can
 * honour: responses a Stop interrupted, saved fragments, and operations awaiting confirmation.
 */
export function historyMarkers(
  threadId: string,
  messages: readonly MessageRecord[],
  checkpoints: readonly CheckpointRecord[],
  operations: readonly OperationRecord[],
) {
  return [
    ...checkpoints
      // A cancel that caught no step in progress (a run that never started) interrupted nothing.
      .filter((checkpoint) => checkpoint.kind === "cancel_accepted" && checkpoint.pendingStep !== null)
      .map((checkpoint) => ({
        type: "interrupted_response" as const,
        label: "previous response was interrupted",
        run_id: checkpoint.runId,
        checkpoint_id: checkpoint.checkpointId,
        state_version: checkpoint.stateVersion,
        discarded_stream_chars: checkpoint.cancelledGeneration?.discardedStreamChars ?? null,
      })),
    ...messages
      .filter((message) => message.publicationStatus === "fragment")
      .map((message) => ({ type: "fragment" as const, label: "saved fragment", message_id: message.messageId, run_id: message.runId })),
    ...operations
      .filter((operation) => operation.phase === "outcome_unknown")
      .map((operation) => ({
        type: "operation_unconfirmed" as const,
        label: "awaiting confirmation",
        op_id: operation.opId,
        tool: operation.toolName,
        confirm_url: confirmUrl(threadId, operation.opId),
      })),
  ];
}

export function stepView(step: RunStepRecord) {
  return {
    step_id: step.stepId,
    status: step.status,
    depends_on: step.dependsOn,
    parent_step_id: step.parentStepId,
    title: step.title,
    started_at: iso(step.startedAt),
    ended_at: iso(step.endedAt),
    checkpoint_id: step.checkpointId,
    message_id: step.messageId,
    result: step.result === null ? null : (JSON.parse(step.result) as unknown),
    reused_from_run_id: step.reusedFromRunId,
    error: step.error,
  };
}

export function agentView(agent: AgentDescription) {
  return { name: agent.name, description: agent.description, config_schema: agent.configSchema };
}
