/** How a run enters the store: created, enqueued behind the active run, or admitted from the queue. */
import { addStats, emptyStats, type CheckpointRecord, type MessageRecord, type RunRecord, type ThreadRecord, type UsageStats } from "../../core/index.js";
import type { CreateRunInput, CreateRunResult } from "../store.js";
import { toCheckpoint, toRun } from "../rows.js";
import { checkpointAtVersion, checkpointInLineage, readLineage } from "./lineage.js";
import { findRunByIdempotencyKey } from "./run-queries.js";
import { plainMessage } from "./plain-message.js";
import type { SqlContext } from "./sql-context.js";
import { insertThread } from "./thread-queries.js";

/**
 * Creates a run: existing, enqueued, resumed or started with its input accepted. The same run
 * created concurrently is a unique violation: run again, it finds the committed one.
 */
export async function createRun(context: SqlContext, input: CreateRunInput): Promise<CreateRunResult> {
  try {
    return await context.transaction(
      async (tx) => {
        const result = await admitRun(tx, input);
        // A refused run in a new thread takes its thread back with it: nothing is left of a refused create.
        if (input.newThread && result.kind !== "created") throw new RefusedInNewThread(result);
        return result;
      },
      { rerunOnConflictWith: ["runs_pkey", "runs_by_idempotency_key"] },
    );
  } catch (error) {
    if (error instanceof RefusedInNewThread) return error.result;
    throw error;
  }
}

/** Rolls back the transaction of a create in a new thread that was refused; carries the refusal out. */
class RefusedInNewThread extends Error {
  constructor(readonly result: CreateRunResult) {
    super(`run refused: ${result.kind}`);
  }
}

/** The create's work in its transaction: the refusal, the earlier run, or the run made. */
async function admitRun(tx: SqlContext, input: CreateRunInput): Promise<CreateRunResult> {
  let read: { thread: ThreadRecord; nextPosition: number } | undefined;
  if (input.newThread) {
    // A repeat finds the first run in the thread made for it. Two firsts at once both get here;
    // the second's run insert conflicts, and its rerun (the thread rolled back with it) finds the first's.
    const earlier = await earlierRun(tx, input);
    if (earlier) return repeatOf(earlier, input);
    read = { thread: await insertThread(tx, { tenantId: input.tenantId, threadId: input.threadId, ...input.newThread, now: input.now }), nextPosition: 0 };
  } else {
    // The thread's row is locked first: the same create arriving twice at once waits here for
    // the first, then finds its run below (not the thread busy with it).
    read = await tx.threadWithPosition(input.tenantId, input.threadId);
    const earlier = await earlierRun(tx, input);
    if (earlier) return repeatOf(earlier, input);
  }
  if (!read || read.thread.status !== "active") return { kind: "thread_not_found" };
  const { thread } = read;
  // The version check comes first: a stale client learns it is stale even on a busy thread.
  const builtOn = await checkBuiltOn(tx, input, thread);
  if (builtOn) return builtOn;
  // An external action whose outcome nobody knows must be confirmed before anything builds on it (DESIGN §6).
  const unconfirmed = await tx.operationsOfThread(input.tenantId, input.threadId, "outcome_unknown");
  if (unconfirmed.length > 0) return { kind: "operation_unconfirmed", thread, operations: unconfirmed };
  if (thread.activeRunId !== null) {
    if (!input.enqueue || input.input === null) return { kind: "run_in_progress", thread };
    const full = await tenantAtLimit(tx, input, "queued");
    if (full) return full;
    // It waits, its input not yet accepted: nothing of the thread changes until it is admitted.
    await insertRun(tx, input, thread.headCheckpointId, thread.stateVersion, { messageCount: 0 }, true);
    return { kind: "enqueued", run: (await tx.run(input.tenantId, input.runId))!, thread };
  }
  const full = await tenantAtLimit(tx, input, "active");
  if (full) return full;
  if (input.input === null) {
    // Continue from a Stop without a new message: accepting the run is still a transition, and
    // its checkpoint names the step that runs again.
    const head = await tx.sql("SELECT * FROM checkpoints WHERE tenant_id = ? AND checkpoint_id = ?").get(
      input.tenantId,
      thread.headCheckpointId,
    );
    const resumed = await tx.advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "resume_accepted",
        runId: input.runId,
        pendingStep: head ? toCheckpoint(head).pendingStep : null,
        resumePolicy: "regenerate_pending_step",
        createdAt: input.now,
      },
      { activeRunId: input.runId },
    );
    await insertRun(tx, { ...input, inputMessageId: "" }, thread.headCheckpointId, resumed.thread.stateVersion, {}, false);
    return {
      kind: "created",
      run: (await tx.run(input.tenantId, input.runId))!,
      thread: resumed.thread,
      message: null,
      checkpoint: resumed.checkpoint,
    };
  }
  const { thread: advanced, message, checkpoint } = await acceptInput(tx, thread, read.nextPosition, {
    runId: input.runId,
    messageId: input.inputMessageId,
    checkpointId: input.checkpointId,
    content: input.input.content,
    now: input.now,
  });
  await insertRun(tx, input, thread.headCheckpointId, advanced.stateVersion, { messageCount: 1 }, false);
  return { kind: "created", run: (await tx.run(input.tenantId, input.runId))!, thread: advanced, message, checkpoint };
}

/**
 * A create that names a run made before: the same request returns it; another is refused. A run
 * in a new thread is the same request whatever thread the server made for it.
 */
function repeatOf(earlier: RunRecord, input: CreateRunInput): Extract<CreateRunResult, { kind: "existing" | "key_reused" }> {
  const isSameRequest = earlier.requestHash === input.requestHash && (input.newThread !== undefined || earlier.threadId === input.threadId);
  return isSameRequest ? { kind: "existing", run: earlier } : { kind: "key_reused", run: earlier };
}

/** The run this create names already (by its run id, or its idempotency key), if any. */
async function earlierRun(tx: SqlContext, input: CreateRunInput): Promise<RunRecord | undefined> {
  return (await tx.run(input.tenantId, input.runId)) ?? (input.idempotencyKey ? await findRunByIdempotencyKey(tx, input.tenantId, input.idempotencyKey) : undefined);
}

/**
 * What the create builds on, checked against the locked thread: a resume point must be the
 * lineage's head, and the thread must be at the version the client built on (a resume's own
 * version unless the client named one). Undefined when it may go on.
 */
async function checkBuiltOn(
  tx: SqlContext,
  input: CreateRunInput,
  thread: ThreadRecord,
): Promise<Extract<CreateRunResult, { kind: "checkpoint_not_found" | "state_version_conflict" }> | undefined> {
  let expected = input.expectedStateVersion;
  if (input.resumeFromCheckpointId != null) {
    const levels = (await readLineage(tx.sql, input.tenantId, input.threadId))!;
    const resumePoint = await checkpointInLineage(tx.sql, input.tenantId, levels, input.resumeFromCheckpointId);
    if (!resumePoint) return { kind: "checkpoint_not_found" };
    // An older checkpoint is stale: the client may branch from it.
    if (resumePoint.checkpointId !== thread.headCheckpointId) return { kind: "state_version_conflict", thread, builtOnCheckpointId: resumePoint.checkpointId };
    expected ??= resumePoint.stateVersion;
  }
  if (expected === null || expected === thread.stateVersion) return undefined;
  // The conflict path only: where the client built, so that it can branch from there.
  const levels = (await readLineage(tx.sql, input.tenantId, input.threadId))!;
  const builtOn = await checkpointAtVersion(tx.sql, input.tenantId, levels, expected);
  return { kind: "state_version_conflict", thread, builtOnCheckpointId: builtOn?.checkpointId ?? null };
}

/** Publishes a run's input with its `input_accepted` checkpoint and makes the run the active one. */
async function acceptInput(
  context: SqlContext,
  thread: ThreadRecord,
  position: number,
  input: { runId: string; messageId: string; checkpointId: string; content: string; now: number },
): Promise<{ thread: ThreadRecord; message: MessageRecord; checkpoint: CheckpointRecord }> {
  const advanced = await context.advanceThread(
    thread,
    {
      checkpointId: input.checkpointId,
      kind: "input_accepted",
      runId: input.runId,
      messageId: input.messageId,
      createdAt: input.now,
    },
    { stats: { messageCount: 1 }, activeRunId: input.runId, positions: 1 },
  );
  const message = plainMessage({
    tenantId: thread.tenantId,
    messageId: input.messageId,
    threadId: thread.threadId,
    position,
    role: "user",
    content: input.content,
    runId: input.runId,
    stateVersion: advanced.thread.stateVersion,
    checkpointId: input.checkpointId,
    createdAt: input.now,
  });
  await context.insertMessage(message);
  return { thread: advanced.thread, message, checkpoint: advanced.checkpoint };
}

/** Inserts a queued run and its first transition. */
async function insertRun(
  context: SqlContext,
  input: CreateRunInput,
  baseCheckpointId: string,
  stateVersion: number,
  stats: Partial<UsageStats>,
  isWaiting: boolean,
): Promise<void> {
  await context.sql(
    `INSERT INTO runs (tenant_id, run_id, thread_id, status, attempt, base_checkpoint_id, input, input_message_id,
       idempotency_key, request_hash, model, agent, config, instructions, metadata, on_disconnect, recovery_policy, state_version,
       stats, transition_count, is_waiting, created_at)
     VALUES (?, ?, ?, 'queued', 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
  ).run(
    input.tenantId,
    input.runId,
    input.threadId,
    baseCheckpointId,
    JSON.stringify(input.input),
    input.inputMessageId,
    input.idempotencyKey,
    input.requestHash,
    input.model,
    input.agent ?? "chat",
    input.config ?? null,
    input.instructions ?? null,
    JSON.stringify(input.metadata ?? {}),
    input.onDisconnect,
    input.recoveryPolicy,
    stateVersion,
    JSON.stringify(addStats(emptyStats(), stats)),
    isWaiting ? 1 : 0,
    input.now,
  );
  await context.sql(
    "INSERT INTO run_transitions (tenant_id, run_id, ordinal, from_status, to_status, at) VALUES (?, ?, 1, NULL, 'queued', ?)",
  ).run(input.tenantId, input.runId, input.now);
}

/** Admits the oldest waiting run of an idle thread, accepting its input. */
export async function admitNextRun(
  context: SqlContext,
  tenantId: string,
  threadId: string,
  checkpointId: string,
  now: number,
): Promise<RunRecord | undefined> {
  return context.transaction(async (tx) => {
    const read = await tx.threadWithPosition(tenantId, threadId);
    if (!read || read.thread.status !== "active" || read.thread.activeRunId !== null) return undefined;
    const { thread } = read;
    const row = await tx.sql(
      `SELECT * FROM runs${tx.dialect.throughIndex("runs_waiting")} WHERE tenant_id = ? AND thread_id = ? AND is_waiting = 1 AND status = 'queued'
       ORDER BY created_at, run_id LIMIT 1`,
    ).get(tenantId, threadId);
    if (!row) return undefined;
    const run = toRun(row);
    if (run.input === null || run.inputMessageId === null) return undefined;
    const { thread: advanced } = await acceptInput(tx, thread, read.nextPosition, {
      runId: run.runId,
      messageId: run.inputMessageId,
      checkpointId,
      content: run.input.content,
      now,
    });
    return tx.updateRun(run, {
      is_waiting: 0,
      base_checkpoint_id: thread.headCheckpointId,
      state_version: advanced.stateVersion,
      stats: JSON.stringify(addStats(run.stats, { messageCount: 1 })),
    });
  });
}

/**
 * The tenant's limit this create would pass, if it is at it: its unfinished runs, waiting
 * (`queued`: behind another run of their thread) or not (`active`), counted in the create's own
 * transaction (exact on SQLite's one writer; on PostgreSQL two creates at the same moment may
 * both pass the last place).
 */
async function tenantAtLimit(
  tx: SqlContext,
  input: CreateRunInput,
  queue: "active" | "queued",
): Promise<Extract<CreateRunResult, { kind: "too_many_runs" }> | undefined> {
  const limits = input.tenantRunLimits;
  if (!limits) return undefined;
  const limit = queue === "active" ? limits.maxActiveRuns : limits.maxQueuedRuns;
  // No limit: nothing to count.
  if (!Number.isFinite(limit)) return undefined;
  const row = (await tx.sql(
    `SELECT count(*) AS count FROM runs${tx.dialect.throughIndex("runs_unfinished_by_tenant")}
     WHERE tenant_id = ? AND is_waiting = ? AND status NOT IN ('completed', 'failed', 'cancelled')`,
  ).get(input.tenantId, queue === "queued" ? 1 : 0)) as { count: number | string } | undefined;
  return Number(row?.count ?? 0) >= limit ? { kind: "too_many_runs", queue, limit } : undefined;
}
