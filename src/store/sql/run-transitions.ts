/** A run's life after creation: claim, transitions, publication, cancel and finish. */
import { addStats, canFinishRun, canMoveRun, canPublish, decideCancel, resumePolicyAfterCancel, type MessageRecord, type RunRecord, type ThreadRecord } from "../../core/index.js";
import type {
  AcceptedCancelRecord,
  ClaimRunInput,
  FinishRunInput,
  PublishMessageInput,
  PublishMessageResult,
  RequestCancelInput,
  RequestCancelResult,
  TransitionRunInput,
} from "../store.js";
import { endUnfinishedSteps, recordStepWork, writeSteps } from "./run-steps.js";
import { plainMessage } from "./plain-message.js";
import type { SqlContext } from "./sql-context.js";
import { StoreInvariantError } from "../store-invariant-error.js";

/** Moves a queued run to running under a worker's lease. */
export async function claimRun(context: SqlContext, input: ClaimRunInput): Promise<RunRecord | undefined> {
  return context.transaction(async (tx) => {
    const run = await tx.run(input.tenantId, input.runId);
    if (!run || run.status !== "queued") return undefined;
    return tx.setRunStatus(run, "running", input.now, {
      lease_owner: input.owner,
      lease_expires_at: input.leaseExpiresAt,
      started_at: run.startedAt ?? input.now,
    });
  });
}

/** Moves a run between non-terminal statuses other than a cancel. */
export async function transitionRun(context: SqlContext, input: TransitionRunInput): Promise<RunRecord | undefined> {
  return context.transaction(async (tx) => {
    const run = await tx.run(input.tenantId, input.runId);
    if (!run || !canMoveRun(run, input.from, input.to, input.attempt)) return undefined;
    const columns: Record<string, unknown> = {};
    if (input.activeOperation !== undefined) columns.active_operation = input.activeOperation;
    if (input.to === "queued") {
      // Handed back for another attempt: the lease is released and the attempt counts up.
      columns.lease_owner = null;
      columns.lease_expires_at = null;
      columns.attempt = run.attempt + 1;
    }
    return tx.setRunStatus(run, input.to, input.now, columns);
  });
}

/** Publishes a running run's message with its checkpoint, completing the run when asked. */
export async function publishMessage(context: SqlContext, input: PublishMessageInput): Promise<PublishMessageResult> {
  return context.transaction(async (tx): Promise<PublishMessageResult> => {
    // The run and its thread in one read (both locked): a publish is the per-step write, its round trips count.
    const read = await tx.runWithThread(input.tenantId, input.runId);
    if (!read) return { kind: "rejected", run: undefined };
    const { run, thread, nextPosition: position } = read;
    // Sticky terminal status and an accepted cancel both win over a late completion.
    if (!canPublish(run, input.attempt) || thread.status !== "active") return { kind: "rejected", run };
    const stats = { ...input.stats, messageCount: (input.stats.messageCount ?? 0) + 1 };
    const advanced = await tx.advanceThread(
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
      label: input.label ?? null,
      interrupted: false,
      format: input.format ?? "text",
      createdAt: input.now,
    };
    await tx.insertMessage(message);
    if (input.recordsStep) {
      // Only a publication that records a step touches the steps: a plain one costs no statement more.
      const work = { checkpointId: input.checkpointId, messageId: input.messageId };
      await recordStepWork(tx, run, input.completedStepId, input.complete ? { ...work, endedAt: input.now } : work);
      if (input.complete) await endUnfinishedSteps(tx, run, "completed", input.now);
    }
    const runColumns = {
      stats: JSON.stringify(addStats(run.stats, stats)),
      state_version: advanced.thread.stateVersion,
      published_message_id: input.messageId,
    };
    const updated = input.complete
      ? await tx.setRunStatus(run, "completed", input.now, {
          ...runColumns,
          ended_at: input.now,
          lease_owner: null,
          lease_expires_at: null,
        })
      : await tx.updateRun(run, runColumns);
    return { kind: "published", message, checkpoint: advanced.checkpoint, thread: advanced.thread, run: updated };
  });
}

/** Accepts a cancel with its `cancel_accepted` checkpoint (DESIGN §3). */
export async function requestCancel(context: SqlContext, input: RequestCancelInput): Promise<RequestCancelResult> {
  return context.transaction(async (tx): Promise<RequestCancelResult> => {
    const read = await tx.runWithThread(input.tenantId, input.runId);
    if (!read) return { kind: "not_found" };
    const { run, thread, nextPosition } = read;
    const decision = decideCancel(run.status);
    if (decision.kind === "already_terminal" || decision.kind === "already_requested") return { kind: decision.kind, run };
    return { kind: "accepted", ...(await acceptCancel(tx, run, thread, input, nextPosition)) };
  });
}

/**
 * Records an accepted cancel of a cancellable `run` inside the caller's transaction: a run that
 * never started stops at once; otherwise it is `cancel_requested` until its worker confirms.
 * A live turn's heard answer (`input.heard`, a running run only) is published by the same
 * checkpoint, marked `interrupted`, at `nextPosition`.
 */
export async function acceptCancel(
  tx: SqlContext,
  run: RunRecord,
  thread: ThreadRecord,
  input: Pick<RequestCancelInput, "reason" | "checkpointId" | "pendingStep" | "now" | "heard">,
  nextPosition?: number,
): Promise<AcceptedCancelRecord> {
  const decision = decideCancel(run.status);
  if (decision.kind !== "cancel_now" && decision.kind !== "request") {
    throw new StoreInvariantError("illegal_transition", run.runId, `run ${run.runId} cannot be cancelled from ${run.status}`);
  }
  const neverStarted = decision.kind === "cancel_now";
  const heard = !neverStarted && run.status === "running" && input.heard?.content && nextPosition !== undefined ? input.heard : undefined;
  const advanced = await tx.advanceThread(
    thread,
    {
      checkpointId: input.checkpointId,
      kind: "cancel_accepted",
      runId: run.runId,
      ...(heard ? { messageId: heard.messageId } : {}),
      pendingStep: input.pendingStep,
      resumePolicy: resumePolicyAfterCancel(input.pendingStep),
      createdAt: input.now,
    },
    // A waiting (enqueued) run is not the active one: the active run is left alone.
    neverStarted && thread.activeRunId === run.runId ? { activeRunId: null } : heard ? { positions: 1, stats: { messageCount: 1 } } : {},
  );
  const heardMessage =
    heard &&
    plainMessage({
      tenantId: run.tenantId,
      messageId: heard.messageId,
      threadId: run.threadId,
      position: nextPosition!,
      role: "assistant",
      content: heard.content,
      runId: run.runId,
      stateVersion: advanced.thread.stateVersion,
      checkpointId: input.checkpointId,
      interrupted: true,
      createdAt: input.now,
    });
  if (heardMessage) await tx.insertMessage(heardMessage);
  const columns = {
    ...(heardMessage ? { published_message_id: heardMessage.messageId, stats: JSON.stringify(addStats(run.stats, { messageCount: 1 })) } : {}),
    is_waiting: 0,
    cancel_requested_at: input.now,
    cancel_reason: input.reason,
    cancel_state_version: advanced.thread.stateVersion,
    cancel_checkpoint_id: input.checkpointId,
    state_version: advanced.thread.stateVersion,
    ...(neverStarted ? { ended_at: input.now } : {}),
  };
  // A queued run handed back by an earlier attempt may have steps: ending now, it closes them.
  if (neverStarted) await endUnfinishedSteps(tx, run, "cancelled", input.now);
  const updated = await tx.setRunStatus(run, decision.to, input.now, columns);
  return { run: updated, thread: advanced.thread, checkpoint: advanced.checkpoint, ...(heardMessage ? { heardMessage } : {}) };
}

/** Moves a run to a terminal status, settling its stats and the thread's active run. */
export async function finishRun(context: SqlContext, input: FinishRunInput): Promise<RunRecord | undefined> {
  return context.transaction(async (tx) => {
    const read = await tx.runWithThread(input.tenantId, input.runId);
    if (!read || !canFinishRun(read.run, input.from, input.to, input.attempt)) return undefined;
    const { run, thread } = read;
    const clearActive = thread.activeRunId === run.runId;
    await tx.sql(
      `UPDATE threads SET stats = ?, active_run_id = CASE WHEN ? = 1 THEN NULL ELSE active_run_id END, updated_at = ?
       WHERE tenant_id = ? AND thread_id = ?`,
    ).run(JSON.stringify(addStats(thread.stats, input.stats)), clearActive ? 1 : 0, input.now, thread.tenantId, thread.threadId);
    if (run.cancelCheckpointId && (input.cancelledGeneration || input.pendingStep)) {
      // Completes the cancel checkpoint's facts once the worker has stopped, never overwriting
      // one: the discarded generation, and the step a cancel accepted elsewhere caught (a step
      // named at acceptance stays), with the resume policy that follows from it.
      await tx.sql(
        `UPDATE checkpoints SET cancelled_generation = COALESCE(cancelled_generation, ?),
           resume_policy = CASE WHEN pending_step IS NULL THEN COALESCE(?, resume_policy) ELSE resume_policy END,
           pending_step = COALESCE(pending_step, ?)
         WHERE tenant_id = ? AND checkpoint_id = ?`,
      ).run(
        input.cancelledGeneration ? JSON.stringify(input.cancelledGeneration) : null,
        input.pendingStep ? resumePolicyAfterCancel(input.pendingStep) : null,
        input.pendingStep ? JSON.stringify(input.pendingStep) : null,
        run.tenantId,
        run.cancelCheckpointId,
      );
    }
    if (input.steps?.length) await writeSteps(tx, run, input.steps);
    // A terminal run shows no unfinished step: those still open end with it, in one statement.
    await endUnfinishedSteps(tx, run, input.to, input.now);
    return tx.setRunStatus(run, input.to, input.now, {
      stats: JSON.stringify(addStats(run.stats, input.stats)),
      failure_reason: input.failureReason ?? null,
      failure_message: input.failureMessage ?? null,
      active_operation: null,
      lease_owner: null,
      lease_expires_at: null,
      ended_at: input.now,
    });
  });
}
