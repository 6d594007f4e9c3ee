/** A run's life after creation in the SQLite adapter: claim, transitions, publication, cancel and finish. */
import { addStats, canTransition, isCancellable, isTerminalStatus, resumePolicyAfterCancel, type CheckpointRecord, type MessageRecord, type RunRecord, type ThreadRecord } from "../../core/index.js";
import type {
  ClaimRunInput,
  FinishRunInput,
  PublishMessageInput,
  PublishMessageResult,
  RequestCancelInput,
  RequestCancelResult,
  TransitionRunInput,
} from "../store.js";
import type { SqliteContext } from "./sqlite-context.js";

/** Moves a queued run to running under a worker's lease. */
export function claimRun(context: SqliteContext, input: ClaimRunInput): RunRecord | undefined {
  const tx = context.db.transaction(() => {
    const run = context.run(input.tenantId, input.runId);
    if (!run || run.status !== "queued") return undefined;
    return context.setRunStatus(run, "running", input.now, {
      lease_owner: input.owner,
      lease_expires_at: input.leaseExpiresAt,
      started_at: run.startedAt ?? input.now,
    });
  });
  return tx();
}

/** Moves a run between non-terminal statuses other than a cancel. */
export function transitionRun(context: SqliteContext, input: TransitionRunInput): RunRecord | undefined {
  const tx = context.db.transaction(() => {
    const run = context.run(input.tenantId, input.runId);
    if (!run || !input.from.includes(run.status) || !canTransition(run.status, input.to)) return undefined;
    if (input.attempt !== undefined && run.attempt !== input.attempt) return undefined;
    // A cancel is accepted only through requestCancel (it records its version and checkpoint).
    if (input.to === "cancel_requested" || isTerminalStatus(input.to)) return undefined;
    const columns: Record<string, unknown> = {};
    if (input.activeOperation !== undefined) columns.active_operation = input.activeOperation;
    if (input.to === "queued") {
      // Handed back for another attempt: the lease is released and the attempt counts up.
      columns.lease_owner = null;
      columns.lease_expires_at = null;
      columns.attempt = run.attempt + 1;
    }
    return context.setRunStatus(run, input.to, input.now, columns);
  });
  return tx();
}

/** Publishes a running run's message with its checkpoint, completing the run when asked. */
export function publishMessage(context: SqliteContext, input: PublishMessageInput): PublishMessageResult {
  const tx = context.db.transaction((): PublishMessageResult => {
    const run = context.run(input.tenantId, input.runId);
    // Sticky terminal status and an accepted cancel both win over a late completion.
    if (!run || run.status !== "running" || (input.attempt !== undefined && run.attempt !== input.attempt)) return { kind: "rejected", run };
    const thread = context.thread(input.tenantId, run.threadId);
    if (!thread || thread.status !== "active") return { kind: "rejected", run };
    const position = context.nextPosition(thread);
    const stats = { ...input.stats, messageCount: (input.stats.messageCount ?? 0) + 1 };
    const advanced = context.advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "message_published",
        runId: input.runId,
        messageId: input.messageId,
        completedStepId: input.completedStepId,
        createdAt: input.now,
      },
      { stats, positions: 1, ...(input.complete ? { activeRunId: null } : {}) },
    );
    const message: MessageRecord = {
      tenantId: input.tenantId,
      messageId: input.messageId,
      threadId: run.threadId,
      position,
      role: input.role,
      content: input.content,
      runId: input.runId,
      stateVersion: advanced.thread.stateVersion,
      checkpointId: input.checkpointId,
      publicationStatus: "published",
      toolCalls: input.toolCalls?.length ? input.toolCalls : null,
      toolCallId: input.toolCallId ?? null,
      toolName: input.toolName ?? null,
      createdAt: input.now,
    };
    context.insertMessage(message);
    const runColumns = {
      stats: JSON.stringify(addStats(run.stats, stats)),
      state_version: advanced.thread.stateVersion,
      published_message_id: input.messageId,
    };
    const updated = input.complete
      ? context.setRunStatus(run, "completed", input.now, {
          ...runColumns,
          ended_at: input.now,
          lease_owner: null,
          lease_expires_at: null,
        })
      : context.updateRun(run, runColumns);
    return { kind: "published", message, checkpoint: advanced.checkpoint, thread: advanced.thread, run: updated };
  });
  return tx();
}

/** Accepts a cancel with its `cancel_accepted` checkpoint (DESIGN §3). */
export function requestCancel(context: SqliteContext, input: RequestCancelInput): RequestCancelResult {
  const tx = context.db.transaction((): RequestCancelResult => {
    const run = context.run(input.tenantId, input.runId);
    if (!run) return { kind: "not_found" };
    if (isTerminalStatus(run.status)) return { kind: "already_terminal", run };
    if (!isCancellable(run.status)) return { kind: "already_requested", run };
    const thread = context.thread(input.tenantId, run.threadId)!;
    return { kind: "accepted", ...acceptCancel(context, run, thread, input) };
  });
  return tx();
}

/**
 * Records an accepted cancel of a cancellable `run` inside the caller's transaction: a run that
 * never started stops at once; otherwise it is `cancel_requested` until its worker confirms.
 */
export function acceptCancel(
  context: SqliteContext,
  run: RunRecord,
  thread: ThreadRecord,
  input: Pick<RequestCancelInput, "reason" | "checkpointId" | "pendingStep" | "now">,
): { run: RunRecord; thread: ThreadRecord; checkpoint: CheckpointRecord } {
  const neverStarted = run.status === "queued";
  const advanced = context.advanceThread(
    thread,
    {
      checkpointId: input.checkpointId,
      kind: "cancel_accepted",
      runId: run.runId,
      pendingStep: input.pendingStep,
      resumePolicy: resumePolicyAfterCancel(input.pendingStep),
      createdAt: input.now,
    },
    // A waiting (enqueued) run is not the active one: the active run is left alone.
    neverStarted && thread.activeRunId === run.runId ? { activeRunId: null } : {},
  );
  const columns = {
    is_waiting: 0,
    cancel_requested_at: input.now,
    cancel_reason: input.reason,
    cancel_state_version: advanced.thread.stateVersion,
    cancel_checkpoint_id: input.checkpointId,
    state_version: advanced.thread.stateVersion,
    ...(neverStarted ? { ended_at: input.now } : {}),
  };
  const updated = context.setRunStatus(run, neverStarted ? "cancelled" : "cancel_requested", input.now, columns);
  return { run: updated, thread: advanced.thread, checkpoint: advanced.checkpoint };
}

/** Moves a run to a terminal status, settling its stats and the thread's active run. */
export function finishRun(context: SqliteContext, input: FinishRunInput): RunRecord | undefined {
  const tx = context.db.transaction(() => {
    const run = context.run(input.tenantId, input.runId);
    if (!run || !input.from.includes(run.status) || !canTransition(run.status, input.to)) return undefined;
    if (input.attempt !== undefined && run.attempt !== input.attempt) return undefined;
    // Only a cancel that requestCancel accepted can end as cancelled.
    if (input.to === "cancelled" && run.cancelCheckpointId === null) return undefined;
    const thread = context.thread(input.tenantId, run.threadId);
    if (thread) {
      const stats = addStats(thread.stats, input.stats);
      const clearActive = thread.activeRunId === run.runId;
      context.sql(
        `UPDATE threads SET stats = ?, active_run_id = CASE WHEN ? THEN NULL ELSE active_run_id END, updated_at = ?
         WHERE tenant_id = ? AND thread_id = ?`,
      ).run(JSON.stringify(stats), clearActive ? 1 : 0, input.now, thread.tenantId, thread.threadId);
    }
    if (input.cancelledGeneration && run.cancelCheckpointId) {
      // Completes the cancel checkpoint's facts once the worker has stopped; never overwritten.
      context.sql(
        `UPDATE checkpoints SET cancelled_generation = ?
         WHERE tenant_id = ? AND checkpoint_id = ? AND cancelled_generation IS NULL`,
      ).run(JSON.stringify(input.cancelledGeneration), run.tenantId, run.cancelCheckpointId);
    }
    if (input.pendingStep && run.cancelCheckpointId) {
      // The worker names the step a cancel accepted elsewhere caught; a step named at acceptance stays.
      context.sql(
        `UPDATE checkpoints SET pending_step = ?, resume_policy = ?
         WHERE tenant_id = ? AND checkpoint_id = ? AND pending_step IS NULL`,
      ).run(JSON.stringify(input.pendingStep), resumePolicyAfterCancel(input.pendingStep), run.tenantId, run.cancelCheckpointId);
    }
    return context.setRunStatus(run, input.to, input.now, {
      stats: JSON.stringify(addStats(run.stats, input.stats)),
      failure_reason: input.failureReason ?? null,
      failure_message: input.failureMessage ?? null,
      active_operation: null,
      lease_owner: null,
      lease_expires_at: null,
      ended_at: input.now,
    });
  });
  return tx();
}
