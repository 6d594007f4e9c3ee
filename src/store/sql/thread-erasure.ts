/**
 * Erasure (docs/data/lifetimes.md): a thread's text leaves the store in one transaction, and only
 * what the invariants need stays: the thread row (status `erased`, its counts, one `thread_erased`
 * checkpoint a version past the last), its runs' statuses, stats and transitions, and its
 * operations reduced to hashed keys and outcomes, so a retried action still runs nothing.
 */
import { hashIdempotencyKey, HASHED_KEY_PREFIX, isTerminalStatus } from "../../core/index.js";
import type { EraseThreadInput, EraseThreadResult } from "../store.js";
import { toOperation, toRun } from "../rows.js";
import { reduceOperation } from "./retention.js";
import { UNDECIDED_CHECKPOINT_FIELDS, type SqlContext } from "./sql-context.js";

/** Erases one thread of a tenant, or says why not (a run still going, a branch reading through it). */
export async function eraseThread(context: SqlContext, input: EraseThreadInput): Promise<EraseThreadResult> {
  const { tenantId, threadId, now } = input;
  return context.transaction(async (tx): Promise<EraseThreadResult> => {
    const thread = await tx.thread(tenantId, threadId);
    if (!thread) return { kind: "thread_not_found" };
    if (thread.status === "erased") return { kind: "already_erased", thread };
    const runs = (await tx.sql("SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ?").all(tenantId, threadId)).map(toRun);
    const going = runs.filter((run) => !isTerminalStatus(run.status));
    if (going.length > 0) return { kind: "run_in_progress", runs: going };
    // A branch reads its shared prefix through this thread's rows: erasing them would change its history.
    const branches = await tx.sql("SELECT thread_id FROM threads WHERE tenant_id = ? AND parent_thread_id = ? AND status <> 'erased'").all(tenantId, threadId);
    if (branches.length > 0) return { kind: "has_branches", branchIds: branches.map((row) => String(row.thread_id)) };

    const runIds = runs.map((run) => run.runId);
    const erased = { messages: 0, checkpoints: 0, steps: 0, traces: 0, events: 0, operations: 0 };
    erased.messages = (await tx.sql("DELETE FROM messages WHERE tenant_id = ? AND thread_id = ?").run(tenantId, threadId)).changes;
    erased.checkpoints = (await tx.sql("DELETE FROM checkpoints WHERE tenant_id = ? AND thread_id = ?").run(tenantId, threadId)).changes;
    erased.steps = (await tx.sql("DELETE FROM run_steps WHERE tenant_id = ? AND thread_id = ?").run(tenantId, threadId)).changes;
    erased.traces = (await tx.sql("DELETE FROM traces WHERE tenant_id = ? AND thread_id = ?").run(tenantId, threadId)).changes;
    const eventLog = tx.dialect.eventLogTable;
    for (const run of runs) {
      erased.traces += (await tx.sql("DELETE FROM traces WHERE tenant_id = ? AND run_id = ?").run(tenantId, run.runId)).changes;
      if (eventLog) erased.events += (await tx.sql(`DELETE FROM ${eventLog} WHERE tenant_id = ? AND run_id = ?`).run(tenantId, run.runId)).changes;
      // The run's status, stats and transitions stay; what the client wrote into it goes.
      const key = run.idempotencyKey === null || run.idempotencyKey.startsWith(HASHED_KEY_PREFIX) ? run.idempotencyKey : hashIdempotencyKey(run.idempotencyKey);
      await tx.sql(
        `UPDATE runs SET input = 'null', instructions = NULL, config = NULL, metadata = '{}', failure_message = NULL, request_hash = 'erased',
           cancel_reason = CASE WHEN cancel_reason IS NULL THEN NULL ELSE 'erased' END, idempotency_key = ?,
           detail_pruned_at = COALESCE(detail_pruned_at, ?)
         WHERE tenant_id = ? AND run_id = ?`,
      ).run(key, now, tenantId, run.runId);
    }
    const operations = (await tx.sql("SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ?").all(tenantId, threadId)).map(toOperation);
    for (const operation of operations) if (await reduceOperation(tx, operation, now)) erased.operations++;

    // The erasure is itself a transition: one version up, its checkpoint the thread's only one.
    const stateVersion = thread.stateVersion + 1;
    await tx.insertCheckpoint({
      tenantId,
      checkpointId: input.checkpointId,
      threadId,
      parentCheckpointId: null,
      stateVersion,
      kind: "thread_erased",
      ...UNDECIDED_CHECKPOINT_FIELDS,
      createdAt: now,
    });
    await tx.sql(
      `UPDATE threads SET status = 'erased', title = NULL, metadata = '{}', state_version = ?, head_checkpoint_id = ?,
         active_run_id = NULL, updated_at = ?
       WHERE tenant_id = ? AND thread_id = ?`,
    ).run(stateVersion, input.checkpointId, now, tenantId, threadId);
    return { kind: "erased", thread: (await tx.thread(tenantId, threadId))!, runIds, erased };
  });
}

/** System-level: the ids of a tenant's threads not erased yet, branches before their parents (each erasable once its branches are). */
export async function listErasableThreads(context: SqlContext, tenantId: string): Promise<string[]> {
  const rows = await context.sql("SELECT thread_id, parent_thread_id FROM threads WHERE tenant_id = ? AND status <> 'erased'").all(tenantId);
  const children = new Map<string, string[]>();
  const ids = new Set(rows.map((row) => String(row.thread_id)));
  for (const row of rows) {
    const parent = row.parent_thread_id === null ? null : String(row.parent_thread_id);
    if (parent !== null && ids.has(parent)) children.set(parent, [...(children.get(parent) ?? []), String(row.thread_id)]);
  }
  const ordered: string[] = [];
  const visit = (threadId: string): void => {
    for (const child of children.get(threadId) ?? []) visit(child);
    ordered.push(threadId);
  };
  for (const row of rows) {
    const parent = row.parent_thread_id === null ? null : String(row.parent_thread_id);
    if (parent === null || !ids.has(parent)) visit(String(row.thread_id));
  }
  return ordered;
}
