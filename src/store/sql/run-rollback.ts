/** Taking back a stopped run's turn (LangGraph's `rollback`): its input leaves the visible result, as a new version. */
import { isTerminalStatus } from "../../core/index.js";
import { toCheckpoint } from "../rows.js";
import type { RollbackRunInput, RollbackRunResult } from "../store.js";
import { StoreInvariantError } from "../store-invariant-error.js";
import type { SqlContext } from "./sql-context.js";

/**
 * Marks the input of a run that ended `cancelled` or `failed` deleted, with a `run_rolled_back`
 * checkpoint, while it is still the thread's last visible message and no other run is active.
 * Append-only: the row keeps the version and checkpoint that published it.
 */
export async function rollbackRun(context: SqlContext, input: RollbackRunInput): Promise<RollbackRunResult> {
  return context.transaction(async (tx): Promise<RollbackRunResult> => {
    // Both rows locked in one statement, as a cancel locks them.
    const read = await tx.runWithThread(input.tenantId, input.runId);
    if (!read || read.thread.status !== "active") return { kind: "run_not_found" };
    const { run, thread } = read;
    const earlier = await tx.sql(
      `SELECT * FROM checkpoints${tx.dialect.throughIndex("checkpoints_rolling_back")}
       WHERE tenant_id = ? AND thread_id = ? AND run_id = ? AND kind = 'run_rolled_back'`,
    ).get(input.tenantId, run.threadId, run.runId);
    const stored = run.inputMessageId === null ? undefined : await tx.message(input.tenantId, run.inputMessageId);
    if (earlier && stored) {
      return { kind: "already_rolled_back", run, message: stored, checkpoint: toCheckpoint(earlier), thread };
    }
    if (!isTerminalStatus(run.status)) return { kind: "not_rollbackable", run, reason: "not_ended" };
    if (run.status === "completed") return { kind: "not_rollbackable", run, reason: "completed" };
    if (!stored || stored.threadId !== run.threadId || stored.publicationStatus !== "published") {
      return { kind: "not_rollbackable", run, reason: "no_input" };
    }
    if (thread.activeRunId !== null) return { kind: "run_in_progress", run, thread };
    const later = await tx.sql(
      "SELECT message_id FROM messages WHERE tenant_id = ? AND thread_id = ? AND position > ? AND publication_status <> 'deleted' LIMIT 1",
    ).get(input.tenantId, run.threadId, stored.position);
    if (later) return { kind: "thread_moved_on", run, thread };
    const advanced = await tx.advanceThread(
      thread,
      { checkpointId: input.checkpointId, kind: "run_rolled_back", runId: run.runId, messageId: stored.messageId, createdAt: input.now },
      {},
    );
    const result = await tx.sql(
      `UPDATE messages SET publication_status = 'deleted'
       WHERE tenant_id = ? AND message_id = ? AND publication_status = 'published'`,
    ).run(input.tenantId, stored.messageId);
    if (result.changes !== 1) throw new StoreInvariantError("compare_and_set_failed", stored.messageId, `message status compare-and-set failed for ${stored.messageId}`);
    return { kind: "rolled_back", run, message: { ...stored, publicationStatus: "deleted" }, checkpoint: advanced.checkpoint, thread: advanced.thread };
  });
}
