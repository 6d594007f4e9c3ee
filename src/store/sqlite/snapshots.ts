/** Whole-thread snapshots from the SQLite adapter, as `tidemark check` reads them. */
import type { ThreadSnapshot } from "../store.js";
import { lineageScanOrder, type BranchKey, type ThreadKey } from "../lineage-scan-order.js";
import { toCheckpoint, toMessage, toOperation, toRun, toTransition, type Row } from "../rows.js";
import type { SqliteContext } from "./sqlite-context.js";

/** Every thread's own rows, in lineage order (see `Store.scanThreads`), each read in its own transaction. */
export async function* scanThreads(context: SqliteContext): AsyncIterable<ThreadSnapshot> {
  const branches = (
    context.sql(
      "SELECT tenant_id, thread_id, parent_thread_id, fork_state_version FROM threads WHERE parent_thread_id IS NOT NULL",
    ).all() as Row[]
  ).map(
    (row): BranchKey => ({
      tenantId: row.tenant_id as string,
      threadId: row.thread_id as string,
      parentThreadId: row.parent_thread_id as string,
      forkStateVersion: Number(row.fork_state_version ?? 0),
    }),
  );
  for await (const key of lineageScanOrder(roots(context), branches)) {
    const snapshot = readSnapshot(context, key.tenantId, key.threadId);
    if (snapshot) yield snapshot;
  }
}

async function* roots(context: SqliteContext): AsyncIterable<ThreadKey> {
  const rows = context.sql(
    "SELECT tenant_id, thread_id FROM threads WHERE parent_thread_id IS NULL ORDER BY tenant_id, thread_id",
  ).all() as Row[];
  for (const row of rows) yield { tenantId: row.tenant_id as string, threadId: row.thread_id as string };
}

/** One thread's own rows read in one transaction, so a concurrent write cannot tear the snapshot. */
function readSnapshot(context: SqliteContext, tenantId: string, threadId: string): ThreadSnapshot | undefined {
  return context.db.transaction(() => {
    const thread = context.thread(tenantId, threadId);
    if (!thread) return undefined;
    const all = (sql: string) => context.sql(sql).all(tenantId, threadId) as Row[];
    // Without statistics SQLite reads runs, transitions and operations by the primary key's tenant
    // prefix, every row of the tenant for each thread; the thread's indexes keep a scan linear.
    return {
      thread,
      runs: all("SELECT * FROM runs INDEXED BY runs_by_thread WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at").map(toRun),
      transitions: all(
        `SELECT t.* FROM runs r INDEXED BY runs_by_thread
           CROSS JOIN run_transitions t ON t.tenant_id = r.tenant_id AND t.run_id = r.run_id
         WHERE r.tenant_id = ? AND r.thread_id = ? ORDER BY t.run_id, t.ordinal`,
      ).map(toTransition),
      messages: all("SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? ORDER BY position").map(toMessage),
      checkpoints: all("SELECT * FROM checkpoints WHERE tenant_id = ? AND thread_id = ? ORDER BY state_version").map(toCheckpoint),
      operations: all(
        "SELECT * FROM operations INDEXED BY operations_by_thread WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at, op_id",
      ).map(toOperation),
    };
  })();
}
