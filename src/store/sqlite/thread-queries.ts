/** Threads in the SQLite adapter: creation, reads through a lineage, titles, deletion and forks. */
import { emptyStats, isCancellable, type CheckpointRecord, type MessageRecord, type RunRecord, type ThreadRecord } from "../../core/index.js";
import type {
  AcceptedCancelRecord,
  DeleteThreadInput,
  DeleteThreadResult,
  CreateThreadInput, ForkThreadInput, ForkThreadResult, ListCheckpointsOptions, ListMessagesOptions, ListThreadsOptions } from "../store.js";
import { prefixLength, readLineage, readLineageCheckpoints, readLineageMessages, type LineageLevel } from "./lineage.js";
import { toCheckpoint, toThread, type Row } from "../rows.js";
import { listActiveRuns } from "./run-queries.js";
import { acceptCancel } from "./run-transitions.js";
import type { SqliteContext } from "./sqlite-context.js";

/** Creates a thread with its `thread_created` checkpoint at version 1. */
export function createThread(context: SqliteContext, input: CreateThreadInput): ThreadRecord {
  const tx = context.db.transaction(() => {
    context.sql(
      `INSERT INTO threads (tenant_id, thread_id, status, state_version, head_checkpoint_id, active_run_id, title,
         metadata, next_position, stats, created_at, updated_at)
       VALUES (?, ?, 'active', 1, ?, NULL, ?, ?, 0, ?, ?, ?)`,
    ).run(
      input.tenantId,
      input.threadId,
      input.checkpointId,
      input.title ?? null,
      JSON.stringify(input.metadata),
      JSON.stringify(emptyStats()),
      input.now,
      input.now,
    );
    context.insertCheckpoint({
      tenantId: input.tenantId,
      checkpointId: input.checkpointId,
      threadId: input.threadId,
      parentCheckpointId: null,
      stateVersion: 1,
      kind: "thread_created",
      runId: null,
      messageId: null,
      completedStepId: null,
      pendingStep: null,
      resumePolicy: null,
      cancelledGeneration: null,
      createdAt: input.now,
    });
    return context.thread(input.tenantId, input.threadId)!;
  });
  return tx();
}

/** The thread, unless it is unknown or deleted. */
export function getThread(context: SqliteContext, tenantId: string, threadId: string): ThreadRecord | undefined {
  const thread = context.thread(tenantId, threadId);
  return thread?.status === "active" ? thread : undefined;
}

/** The tenant's threads that are not deleted, most recently updated first, one keyset page. */
export function listThreads(context: SqliteContext, tenantId: string, options: ListThreadsOptions): ThreadRecord[] {
  const limit = Math.floor(options.limit);
  // SQLite reads a negative LIMIT as none at all.
  if (!(limit >= 1)) return [];
  // The row comparison and the order match threads_by_updated_at, read backwards: a page reads only its own rows.
  const rows = options.before
    ? context.sql(
        `SELECT * FROM threads WHERE tenant_id = ? AND status = 'active' AND (updated_at, thread_id) < (?, ?)
         ORDER BY updated_at DESC, thread_id DESC LIMIT ?`,
      ).all(tenantId, options.before.updatedAt, options.before.threadId, limit)
    : context.sql(
        "SELECT * FROM threads WHERE tenant_id = ? AND status = 'active' ORDER BY updated_at DESC, thread_id DESC LIMIT ?",
      ).all(tenantId, limit);
  return (rows as Row[]).map(toThread);
}

/** Marks an active thread deleted and accepts a cancel of each of its runs, in one transaction. */
export function deleteThread(context: SqliteContext, input: DeleteThreadInput): DeleteThreadResult {
  const tx = context.db.transaction((): DeleteThreadResult => {
    let thread = context.thread(input.tenantId, input.threadId);
    if (thread?.status !== "active") return { kind: "thread_not_found" };
    const cancels: AcceptedCancelRecord[] = [];
    const stopping: RunRecord[] = [];
    for (const run of listActiveRuns(context, input.tenantId, input.threadId)) {
      if (!isCancellable(run.status)) {
        stopping.push(run);
        continue;
      }
      const accepted = acceptCancel(context, run, thread, { ...input, checkpointId: input.createCheckpointId(), pendingStep: null });
      cancels.push(accepted);
      thread = accepted.thread;
    }
    context.sql("UPDATE threads SET status = 'deleted', updated_at = ? WHERE tenant_id = ? AND thread_id = ?").run(
      input.now,
      input.tenantId,
      input.threadId,
    );
    return { kind: "deleted", cancels, stopping };
  });
  return tx();
}

/** Sets the thread's title once; a later title never overwrites it. */
export function saveTitle(context: SqliteContext, tenantId: string, threadId: string, title: string, now: number): void {
  context.sql(
    "UPDATE threads SET title = ?, updated_at = ? WHERE tenant_id = ? AND thread_id = ? AND title IS NULL",
  ).run(title, now, tenantId, threadId);
}

/** The lineage's messages in order, read in one transaction. */
export function listMessages(context: SqliteContext, tenantId: string, threadId: string, options: ListMessagesOptions = {}): MessageRecord[] {
  // One read transaction: a branch's levels and their rows are one consistent view.
  return context.db.transaction(() => {
    const levels = readLineage(context.sql, tenantId, threadId);
    return levels ? readLineageMessages(context.sql, tenantId, levels, options.limit) : [];
  })();
}

/** The lineage's checkpoints, read in one transaction. */
export function listCheckpoints(context: SqliteContext, tenantId: string, threadId: string, options: ListCheckpointsOptions = {}): CheckpointRecord[] {
  return context.db.transaction(() => {
    const levels = readLineage(context.sql, tenantId, threadId);
    return levels ? readLineageCheckpoints(context.sql, tenantId, levels, options.fromVersion) : [];
  })();
}

/** Branches a thread at one of its checkpoints (DESIGN §9). */
export function forkThread(context: SqliteContext, input: ForkThreadInput): ForkThreadResult {
  const tx = context.db.transaction((): ForkThreadResult => {
    const source = context.thread(input.tenantId, input.sourceThreadId);
    if (!source || source.status !== "active") return { kind: "thread_not_found" };
    const row = context.sql("SELECT * FROM checkpoints WHERE tenant_id = ? AND checkpoint_id = ?").get(
      input.tenantId,
      input.fromCheckpointId,
    ) as Row | undefined;
    const fork = row ? toCheckpoint(row) : undefined;
    const levels = readLineage(context.sql, input.tenantId, input.sourceThreadId)!;
    const owner = fork ? levelHolding(levels, fork) : undefined;
    if (!fork || !owner) return { kind: "checkpoint_not_found" };
    // The branch hangs off the checkpoint's own thread: its lineage is that thread's, up to the fork version.
    const { base_position: ownerBase } = context.sql(
      "SELECT base_position FROM threads WHERE tenant_id = ? AND thread_id = ?",
    ).get(input.tenantId, owner.threadId) as { base_position: number };
    const basePosition = prefixLength(context.sql, input.tenantId, owner.threadId, ownerBase, fork.stateVersion);
    const stateVersion = fork.stateVersion + 1;
    // The fork point is a fact: the client's metadata cannot overwrite it.
    const metadata = {
      ...input.metadata,
      forked_from: { thread_id: input.sourceThreadId, checkpoint_id: fork.checkpointId },
    };
    context.sql(
      `INSERT INTO threads (tenant_id, thread_id, status, state_version, head_checkpoint_id, active_run_id, title,
         metadata, next_position, stats, created_at, updated_at, parent_thread_id, fork_checkpoint_id,
         fork_state_version, base_position)
       VALUES (?, ?, 'active', ?, ?, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
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
      runId: null,
      messageId: null,
      completedStepId: null,
      pendingStep: null,
      resumePolicy: null,
      cancelledGeneration: null,
      createdAt: input.now,
    };
    context.insertCheckpoint(checkpoint);
    return { kind: "forked", thread: context.thread(input.tenantId, input.threadId)!, checkpoint };
  });
  return tx.immediate();
}

/** The lineage level whose visible checkpoints include `checkpoint`, if any. */
function levelHolding(levels: readonly LineageLevel[], checkpoint: CheckpointRecord): LineageLevel | undefined {
  return levels.find((level) => level.threadId === checkpoint.threadId && checkpoint.stateVersion <= level.maxVersion);
}

/** Sets the title the user chose on an active thread; undefined when there is none. */
export function renameThread(context: SqliteContext, tenantId: string, threadId: string, title: string, now: number): ThreadRecord | undefined {
  const row = context.sql(
    "UPDATE threads SET title = ?, updated_at = ? WHERE tenant_id = ? AND thread_id = ? AND status = 'active' RETURNING *",
  ).get(title, now, tenantId, threadId) as Row | undefined;
  return row ? toThread(row) : undefined;
}
