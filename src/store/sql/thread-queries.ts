/** Threads: creation, reads through a lineage, titles, deletion and forks. */
import { decideCancel, emptyStats, type CheckpointRecord, type MessageRecord, type RunRecord, type ThreadRecord } from "../../core/index.js";
import type {
  AcceptedCancelRecord,
  DeleteThreadInput,
  DeleteThreadResult,
  CreateThreadInput,
  ExecutionView,
  ForkThreadInput,
  ForkThreadResult,
  ListCheckpointsOptions,
  ListMessagesOptions,
  ListThreadsOptions,
  ReadExecutionViewOptions,
} from "../store.js";
import { levelHolding, prefixLength, readLineage, readLineageCheckpoints, readLineageMessages, readLineageOperations } from "./lineage.js";
import { toCheckpoint, toRun, toThread } from "../rows.js";
import { UNDECIDED_CHECKPOINT_FIELDS, type SqlContext } from "./sql-context.js";
import { acceptCancel } from "./run-transitions.js";

/** Creates a thread with its `thread_created` checkpoint at version 1. */
export async function createThread(context: SqlContext, input: CreateThreadInput): Promise<ThreadRecord> {
  return context.transaction((tx) => insertThread(tx, input));
}

/** Inserts a thread and its `thread_created` checkpoint, in the caller's transaction. */
export async function insertThread(tx: SqlContext, input: CreateThreadInput): Promise<ThreadRecord> {
  const row = await tx.sql(
    `INSERT INTO threads (tenant_id, thread_id, status, state_version, head_checkpoint_id, active_run_id, title,
       metadata, next_position, stats, created_at, updated_at)
     VALUES (?, ?, 'active', 1, ?, NULL, ?, ?, 0, ?, ?, ?)
     RETURNING *`,
  ).get(
    input.tenantId,
    input.threadId,
    input.checkpointId,
    input.title ?? null,
    JSON.stringify(input.metadata),
    JSON.stringify(emptyStats()),
    input.now,
    input.now,
  );
  await tx.insertCheckpoint({
    tenantId: input.tenantId,
    checkpointId: input.checkpointId,
    threadId: input.threadId,
    parentCheckpointId: null,
    stateVersion: 1,
    kind: "thread_created",
    ...UNDECIDED_CHECKPOINT_FIELDS,
    createdAt: input.now,
  });
  return toThread(row!);
}

/** The thread, unless it is unknown or deleted. */
export async function getThread(context: SqlContext, tenantId: string, threadId: string): Promise<ThreadRecord | undefined> {
  const thread = await context.thread(tenantId, threadId);
  return thread?.status === "active" ? thread : undefined;
}

/** The tenant's threads that are not deleted, most recently updated first, one keyset page. */
export async function listThreads(context: SqlContext, tenantId: string, options: ListThreadsOptions): Promise<ThreadRecord[]> {
  const limit = Math.floor(options.limit);
  if (!(limit >= 1)) return [];
  // The row comparison and the order match threads_by_updated_at, read backwards: a page reads only its own rows.
  const rows = options.before
    ? await context.sql(
        `SELECT * FROM threads WHERE tenant_id = ? AND status = 'active' AND (updated_at, thread_id) < (?, ?)
         ORDER BY updated_at DESC, thread_id DESC LIMIT ?`,
      ).all(tenantId, options.before.updatedAt, options.before.threadId, limit)
    : await context.sql(
        "SELECT * FROM threads WHERE tenant_id = ? AND status = 'active' ORDER BY updated_at DESC, thread_id DESC LIMIT ?",
      ).all(tenantId, limit);
  return rows.map(toThread);
}

/** Marks an active thread deleted and accepts a cancel of each of its runs, in one transaction. */
export async function deleteThread(context: SqlContext, input: DeleteThreadInput): Promise<DeleteThreadResult> {
  return context.transaction(async (tx): Promise<DeleteThreadResult> => {
    // The thread's row first: run creation and admission lock it too, so none slips in after.
    let thread = await tx.thread(input.tenantId, input.threadId);
    if (thread?.status !== "active") return { kind: "thread_not_found" };
    const cancels: AcceptedCancelRecord[] = [];
    const stopping: RunRecord[] = [];
    const rows = await tx.sql(
      `SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ? AND status NOT IN ('completed', 'failed', 'cancelled')
       ORDER BY created_at, run_id${tx.forUpdate}`,
    ).all(input.tenantId, input.threadId);
    for (const run of rows.map(toRun)) {
      if (decideCancel(run.status).kind === "already_requested") {
        stopping.push(run);
        continue;
      }
      const accepted = await acceptCancel(tx, run, thread, { ...input, checkpointId: input.createCheckpointId(), pendingStep: null });
      cancels.push(accepted);
      thread = accepted.thread;
    }
    await tx.sql("UPDATE threads SET status = 'deleted', updated_at = ? WHERE tenant_id = ? AND thread_id = ?").run(
      input.now,
      input.tenantId,
      input.threadId,
    );
    return { kind: "deleted", cancels, stopping };
  });
}

/** Sets the thread's title once; a later title never overwrites it. */
export async function saveTitle(context: SqlContext, tenantId: string, threadId: string, title: string, now: number): Promise<void> {
  await context.sql(
    "UPDATE threads SET title = ?, updated_at = ? WHERE tenant_id = ? AND thread_id = ? AND title IS NULL",
  ).run(title, now, tenantId, threadId);
}

/** The lineage's messages in order, read in one transaction. */
export async function listMessages(
  context: SqlContext,
  tenantId: string,
  threadId: string,
  options: ListMessagesOptions = {},
): Promise<MessageRecord[]> {
  // One read transaction: a branch's levels and their rows are one consistent view.
  return context.transaction(async (tx) => {
    const levels = await readLineage(tx.sql, tenantId, threadId);
    return levels ? readLineageMessages(tx, tenantId, levels, options.limit) : [];
  }, { readOnly: true });
}

/** The lineage's checkpoints, read in one transaction. */
export async function listCheckpoints(
  context: SqlContext,
  tenantId: string,
  threadId: string,
  options: ListCheckpointsOptions = {},
): Promise<CheckpointRecord[]> {
  return context.transaction(async (tx) => {
    const levels = await readLineage(tx.sql, tenantId, threadId);
    return levels ? readLineageCheckpoints(tx.sql, tenantId, levels, options.fromVersion) : [];
  }, { readOnly: true });
}

/** The thread's messages, operations and recent checkpoints, over one lineage read in one transaction. */
export async function readExecutionView(
  context: SqlContext,
  tenantId: string,
  threadId: string,
  options: ReadExecutionViewOptions,
): Promise<ExecutionView> {
  return context.transaction(async (tx) => {
    const levels = await readLineage(tx.sql, tenantId, threadId);
    if (!levels) return { messages: [], operations: [], checkpoints: [] };
    return {
      messages: await readLineageMessages(tx, tenantId, levels),
      operations: await readLineageOperations(tx.sql, tenantId, levels),
      checkpoints: await readLineageCheckpoints(tx.sql, tenantId, levels, options.checkpointsFromVersion),
    };
  }, { readOnly: true });
}

/** Branches a thread at one of its checkpoints (DESIGN §9). */
export async function forkThread(context: SqlContext, input: ForkThreadInput): Promise<ForkThreadResult> {
  return context.transaction(async (tx): Promise<ForkThreadResult> => {
    const source = await tx.thread(input.tenantId, input.sourceThreadId);
    if (!source || source.status !== "active") return { kind: "thread_not_found" };
    const row = await tx.sql("SELECT * FROM checkpoints WHERE tenant_id = ? AND checkpoint_id = ?").get(
      input.tenantId,
      input.fromCheckpointId,
    );
    const fork = row ? toCheckpoint(row) : undefined;
    const levels = (await readLineage(tx.sql, input.tenantId, input.sourceThreadId))!;
    const owner = fork ? levelHolding(levels, fork) : undefined;
    if (!fork || !owner) return { kind: "checkpoint_not_found" };
    // The branch hangs off the checkpoint's own thread: its lineage is that thread's, up to the fork version.
    const ownerRow = await tx.sql("SELECT base_position FROM threads WHERE tenant_id = ? AND thread_id = ?").get(
      input.tenantId,
      owner.threadId,
    );
    const basePosition = await prefixLength(tx.sql, input.tenantId, owner.threadId, Number(ownerRow!.base_position), fork.stateVersion);
    const stateVersion = fork.stateVersion + 1;
    // The fork point is a fact: the client's metadata cannot overwrite it.
    const metadata = {
      ...input.metadata,
      forked_from: { thread_id: input.sourceThreadId, checkpoint_id: fork.checkpointId },
    };
    const created = await tx.sql(
      `INSERT INTO threads (tenant_id, thread_id, status, state_version, head_checkpoint_id, active_run_id, title,
         metadata, next_position, stats, created_at, updated_at, parent_thread_id, fork_checkpoint_id,
         fork_state_version, base_position)
       VALUES (?, ?, 'active', ?, ?, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       RETURNING *`,
    ).get(
      input.tenantId,
      input.threadId,
      stateVersion,
      input.checkpointId,
      JSON.stringify(metadata),
      basePosition,
      JSON.stringify(emptyStats()),
      input.now,
      input.now,
      owner.threadId,
      fork.checkpointId,
      fork.stateVersion,
      basePosition,
    );
    const checkpoint: CheckpointRecord = {
      tenantId: input.tenantId,
      checkpointId: input.checkpointId,
      threadId: input.threadId,
      parentCheckpointId: fork.checkpointId,
      stateVersion,
      kind: "fork_created",
      ...UNDECIDED_CHECKPOINT_FIELDS,
      createdAt: input.now,
    };
    await tx.insertCheckpoint(checkpoint);
    return { kind: "forked", thread: toThread(created!), checkpoint };
  });
}

/** Sets the title the user chose on an active thread; undefined when there is none. */
export async function renameThread(context: SqlContext, tenantId: string, threadId: string, title: string, now: number): Promise<ThreadRecord | undefined> {
  const row = await context.sql(
    "UPDATE threads SET title = ?, updated_at = ? WHERE tenant_id = ? AND thread_id = ? AND status = 'active' RETURNING *",
  ).get(title, now, tenantId, threadId);
  return row ? toThread(row) : undefined;
}
