/** Row ↔ record mapping shared by the SQLite and PostgreSQL adapters (same column names). */
import type {
  CheckpointRecord,
  MessageRecord,
  OperationRecord,
  RunRecord,
  RunStatus,
  RunStepRecord,
  RunTransitionRecord,
  ThreadRecord,
  TraceRecord,
  UsageStats,
} from "../core/index.js";
import { emptyStats } from "../core/index.js";

export type Row = Record<string, unknown>;

const str = (value: unknown): string => value as string;
const strOrNull = (value: unknown): string | null => (value === null || value === undefined ? null : (value as string));
const num = (value: unknown): number => Number(value);
const numOrNull = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
const json = <T>(value: unknown): T => JSON.parse(value as string) as T;
const jsonOrNull = <T>(value: unknown): T | null => (value === null || value === undefined ? null : json<T>(value));

export function parseStats(value: unknown): UsageStats {
  return { ...emptyStats(), ...json<Partial<UsageStats>>(value) };
}

export function toThread(row: Row): ThreadRecord {
  return {
    tenantId: str(row.tenant_id),
    threadId: str(row.thread_id),
    status: str(row.status) as ThreadRecord["status"],
    stateVersion: num(row.state_version),
    headCheckpointId: str(row.head_checkpoint_id),
    activeRunId: strOrNull(row.active_run_id),
    title: strOrNull(row.title),
    metadata: json(row.metadata),
    stats: parseStats(row.stats),
    forkedFrom:
      row.parent_thread_id === null || row.parent_thread_id === undefined
        ? null
        : {
            threadId: str(row.parent_thread_id),
            checkpointId: str(row.fork_checkpoint_id),
            stateVersion: num(row.fork_state_version),
          },
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
  };
}

export function toMessage(row: Row): MessageRecord {
  return {
    tenantId: str(row.tenant_id),
    messageId: str(row.message_id),
    threadId: str(row.thread_id),
    position: num(row.position),
    role: str(row.role) as MessageRecord["role"],
    content: str(row.content),
    runId: strOrNull(row.run_id),
    stateVersion: num(row.state_version),
    checkpointId: str(row.checkpoint_id),
    publicationStatus: str(row.publication_status) as MessageRecord["publicationStatus"],
    toolCalls: jsonOrNull(row.tool_calls),
    toolCallId: strOrNull(row.tool_call_id),
    toolName: strOrNull(row.tool_name),
    label: strOrNull(row.label),
    interrupted: Number(row.interrupted) === 1,
    format: row.format === "json" ? "json" : "text",
    createdAt: num(row.created_at),
  };
}

export function toCheckpoint(row: Row): CheckpointRecord {
  return {
    tenantId: str(row.tenant_id),
    checkpointId: str(row.checkpoint_id),
    threadId: str(row.thread_id),
    parentCheckpointId: strOrNull(row.parent_checkpoint_id),
    stateVersion: num(row.state_version),
    kind: str(row.kind) as CheckpointRecord["kind"],
    runId: strOrNull(row.run_id),
    messageId: strOrNull(row.message_id),
    completedStepId: strOrNull(row.completed_step_id),
    pendingStep: jsonOrNull(row.pending_step),
    resumePolicy: strOrNull(row.resume_policy) as CheckpointRecord["resumePolicy"],
    cancelledGeneration: jsonOrNull(row.cancelled_generation),
    createdAt: num(row.created_at),
  };
}

export function toRun(row: Row): RunRecord {
  return {
    tenantId: str(row.tenant_id),
    runId: str(row.run_id),
    threadId: str(row.thread_id),
    status: str(row.status) as RunStatus,
    attempt: num(row.attempt),
    baseCheckpointId: str(row.base_checkpoint_id),
    input: json(row.input),
    inputMessageId: row.input_message_id === "" ? null : str(row.input_message_id),
    idempotencyKey: strOrNull(row.idempotency_key),
    requestHash: str(row.request_hash),
    model: str(row.model),
    agent: str(row.agent),
    config: strOrNull(row.config),
    instructions: strOrNull(row.instructions),
    metadata: row.metadata === undefined || row.metadata === null ? {} : json(row.metadata),
    onDisconnect: str(row.on_disconnect) as RunRecord["onDisconnect"],
    recoveryPolicy: str(row.recovery_policy) as RunRecord["recoveryPolicy"],
    stateVersion: num(row.state_version),
    cancelRequestedAt: numOrNull(row.cancel_requested_at),
    cancelReason: strOrNull(row.cancel_reason),
    cancelStateVersion: numOrNull(row.cancel_state_version),
    cancelCheckpointId: strOrNull(row.cancel_checkpoint_id),
    publishedMessageId: strOrNull(row.published_message_id),
    activeOperation: strOrNull(row.active_operation),
    failureReason: strOrNull(row.failure_reason) as RunRecord["failureReason"],
    failureMessage: strOrNull(row.failure_message),
    stats: parseStats(row.stats),
    leaseOwner: strOrNull(row.lease_owner),
    leaseExpiresAt: numOrNull(row.lease_expires_at),
    isWaiting: Number(row.is_waiting ?? 0) === 1,
    createdAt: num(row.created_at),
    startedAt: numOrNull(row.started_at),
    endedAt: numOrNull(row.ended_at),
    detailExpiredAt: numOrNull(row.detail_pruned_at),
  };
}

export function toStep(row: Row): RunStepRecord {
  return {
    tenantId: str(row.tenant_id),
    runId: str(row.run_id),
    threadId: str(row.thread_id),
    stepId: str(row.step_id),
    ordinal: num(row.ordinal),
    parentStepId: strOrNull(row.parent_step_id),
    title: strOrNull(row.title),
    dependsOn: json(row.depends_on),
    status: str(row.status) as RunStepRecord["status"],
    inputHash: strOrNull(row.input_hash),
    startedAt: numOrNull(row.started_at),
    endedAt: numOrNull(row.ended_at),
    checkpointId: strOrNull(row.checkpoint_id),
    messageId: strOrNull(row.message_id),
    result: strOrNull(row.result),
    reusedFromRunId: strOrNull(row.reused_from_run_id),
    error: strOrNull(row.error),
  };
}

export function toTransition(row: Row): RunTransitionRecord {
  return {
    tenantId: str(row.tenant_id),
    runId: str(row.run_id),
    ordinal: num(row.ordinal),
    from: strOrNull(row.from_status) as RunStatus | null,
    to: str(row.to_status) as RunStatus,
    at: num(row.at),
  };
}

export function toTrace(row: Row): TraceRecord {
  return {
    tenantId: str(row.tenant_id),
    traceId: str(row.trace_id),
    runId: strOrNull(row.run_id),
    threadId: strOrNull(row.thread_id),
    kind: str(row.kind),
    data: json(row.data),
    at: num(row.at),
  };
}

export function toOperation(row: Row): OperationRecord {
  return {
    tenantId: str(row.tenant_id),
    opId: str(row.op_id),
    threadId: str(row.thread_id),
    runId: str(row.run_id),
    toolName: str(row.tool_name),
    toolCallId: str(row.tool_call_id),
    idempotencyKey: str(row.idempotency_key),
    phase: str(row.phase) as OperationRecord["phase"],
    input: str(row.input),
    preview: jsonOrNull(row.preview),
    result: jsonOrNull(row.result),
    error: strOrNull(row.error),
    commitAttempts: num(row.commit_attempts),
    createdAt: num(row.created_at),
    updatedAt: num(row.updated_at),
    reducedAt: numOrNull(row.reduced_at),
    resultKind: strOrNull(row.result_kind),
  };
}
