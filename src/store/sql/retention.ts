/**
 * Retention per layer (docs/data/lifetimes.md): what the pruner expires, a bounded batch at a time.
 * Each batch is one short transaction (or, for fragments, one per fragment), oldest rows first,
 * so a prune never holds a lock, or SQLite's one writer, for longer than a batch takes.
 *
 * - traces: deleted.
 * - run_detail: a finished run's steps are deleted and its instructions, config and metadata
 *   cleared; its status, stats, transitions and published messages stay.
 * - fragments: a saved fragment is taken out of its thread as a delete would (a `message_deleted`
 *   checkpoint, version + 1) and its text cleared; a deleted fragment's text is cleared.
 * - operations: reduced, never deleted: a hashed key, the phase and the result's kind stay, so a
 *   retried send still finds its outcome and runs nothing (invariant 2).
 */
import { hashIdempotencyKey, type OperationRecord } from "../../core/index.js";
import type { PruneBatchInput, RetentionLayer } from "../store.js";
import { toOperation, type Row } from "../rows.js";
import type { SqlContext } from "./sql-context.js";

/** The phases an operation ends in: only those are reduced (a prepared, committing or unknown one is still live). */
const SETTLED_PHASES = "('committed', 'failed', 'abandoned')";

/** Each layer's expired rows, oldest first: the `FROM … WHERE …` both the count and the batch read. */
function expiredRows(context: SqlContext, layer: RetentionLayer): string {
  const index = (name: string) => context.dialect.throughIndex(name);
  switch (layer) {
    case "traces":
      return `FROM traces${index("traces_by_time")} WHERE at < ?`;
    case "run_detail":
      return `FROM runs${index("runs_detail_expirable")} WHERE detail_pruned_at IS NULL AND ended_at IS NOT NULL AND ended_at < ?`;
    case "fragments":
      return `FROM messages${index("messages_fragments_by_time")}
        WHERE role = 'assistant' AND publication_status IN ('fragment', 'deleted') AND created_at < ? AND content <> ''`;
    case "operations":
      return `FROM operations${index("operations_reducible")} WHERE reduced_at IS NULL AND phase IN ${SETTLED_PHASES} AND updated_at < ?`;
  }
}

/** The column each layer's rows age by. */
const AGE_COLUMN: Record<RetentionLayer, string> = {
  traces: "at",
  run_detail: "ended_at",
  fragments: "created_at",
  operations: "updated_at",
};

/** How many rows of `layer` are older than `before` and not pruned yet. */
export async function countExpired(context: SqlContext, layer: RetentionLayer, before: number): Promise<number> {
  const row = await context.sql(`SELECT COUNT(*) AS n ${expiredRows(context, layer)}`).get(before);
  return Number(row?.n ?? 0);
}

/** Prunes up to `limit` of the oldest expired rows of one layer; how many it pruned. */
export async function pruneExpired(context: SqlContext, input: PruneBatchInput): Promise<number> {
  if (input.limit <= 0) return 0;
  switch (input.layer) {
    case "traces":
      return pruneTraces(context, input);
    case "run_detail":
      return pruneRunDetail(context, input);
    case "fragments":
      return pruneFragments(context, input);
    case "operations":
      return reduceOperations(context, input);
  }
}

/** The oldest expired rows of a layer (a batch). */
function oldest(context: SqlContext, input: PruneBatchInput, columns: string): Promise<Row[]> {
  return context
    .sql(`SELECT ${columns} ${expiredRows(context, input.layer)} ORDER BY ${AGE_COLUMN[input.layer]} LIMIT ?`)
    .all(input.before, input.limit);
}

/**
 * One statement a batch (row by row took the batch's time several times over), counted by what
 * it deleted: another process's prune may have taken a row first.
 */
async function pruneTraces(context: SqlContext, input: PruneBatchInput): Promise<number> {
  const result = await context
    .sql(`DELETE FROM traces WHERE trace_id IN (SELECT trace_id ${expiredRows(context, "traces")} ORDER BY at LIMIT ?)`)
    .run(input.before, input.limit);
  return result.changes;
}

async function pruneRunDetail(context: SqlContext, input: PruneBatchInput): Promise<number> {
  return context.transaction(async (tx) => {
    const rows = await oldest(tx, input, "tenant_id, run_id");
    let pruned = 0;
    for (const row of rows) {
      // Compare-and-set: a run pruned meanwhile (another process) is counted once.
      const result = await tx.sql(
        `UPDATE runs SET instructions = NULL, config = NULL, metadata = '{}', detail_pruned_at = ?
         WHERE tenant_id = ? AND run_id = ? AND detail_pruned_at IS NULL AND ended_at IS NOT NULL`,
      ).run(input.now, row.tenant_id, row.run_id);
      if (result.changes !== 1) continue;
      await tx.sql("DELETE FROM run_steps WHERE tenant_id = ? AND run_id = ?").run(row.tenant_id, row.run_id);
      pruned++;
    }
    return pruned;
  });
}

/**
 * A fragment still visible leaves its thread as a delete would, with a checkpoint, so nothing the
 * user may build on changes without a new version; one on a thread with an active run waits for
 * the next batch (a transition in the middle of a turn would split it).
 */
async function pruneFragments(context: SqlContext, input: PruneBatchInput): Promise<number> {
  const rows = await oldest(context, input, "tenant_id, message_id, thread_id");
  let pruned = 0;
  for (const row of rows) {
    const isPruned = await context.transaction(async (tx) => {
      const tenantId = String(row.tenant_id);
      const thread = await tx.thread(tenantId, String(row.thread_id));
      const message = await tx.message(tenantId, String(row.message_id));
      if (!message || message.content === "") return false;
      if (message.publicationStatus === "fragment" && thread?.status === "active") {
        if (thread.activeRunId !== null) return false;
        await tx.advanceThread(thread, { checkpointId: input.createCheckpointId(), kind: "message_deleted", messageId: message.messageId, createdAt: input.now }, {});
      }
      const result = await tx.sql(
        `UPDATE messages SET content = '', publication_status = 'deleted'
         WHERE tenant_id = ? AND message_id = ? AND publication_status IN ('fragment', 'deleted')`,
      ).run(tenantId, message.messageId);
      return result.changes === 1;
    });
    if (isPruned) pruned++;
  }
  return pruned;
}

/** The type of a committed result, the one thing a reduced row says about it. */
function resultKind(result: unknown): string {
  if (result === null || result === undefined) return "null";
  return Array.isArray(result) ? "array" : typeof result;
}

/**
 * Reduces one operation to its hashed key and outcome, by compare-and-set on its phase and time
 * (a key prepared again meanwhile is live, not expired); true when it did.
 */
export async function reduceOperation(context: SqlContext, operation: OperationRecord, now: number): Promise<boolean> {
  if (operation.reducedAt) return false;
  const result = await context.sql(
    `UPDATE operations SET idempotency_key = ?, input = '', preview = NULL, result = NULL, error = NULL,
       result_kind = ?, reduced_at = ?
     WHERE tenant_id = ? AND op_id = ? AND phase = ? AND updated_at = ? AND reduced_at IS NULL`,
  ).run(
    hashIdempotencyKey(operation.idempotencyKey),
    operation.phase === "committed" ? resultKind(operation.result) : null,
    now,
    operation.tenantId,
    operation.opId,
    operation.phase,
    operation.updatedAt,
  );
  return result.changes === 1;
}

async function reduceOperations(context: SqlContext, input: PruneBatchInput): Promise<number> {
  return context.transaction(async (tx) => {
    const rows = await oldest(tx, input, "*");
    let reduced = 0;
    for (const operation of rows.map(toOperation)) if (await reduceOperation(tx, operation, input.now)) reduced++;
    return reduced;
  });
}
