/** Whole-thread snapshots, as `tidemark check` reads them. */
import type { ThreadSnapshot } from "../store.js";
import { lineageScanOrder, type BranchKey, type ThreadKey } from "../lineage-scan-order.js";
import { toCheckpoint, toMessage, toRun, toStep, toTransition } from "../rows.js";
import type { SqlContext } from "./sql-context.js";

/** Root keys read per page: the scan holds one page of roots (and the branches' keys), never the whole table. */
const PAGE_SIZE = 100;

/** Every thread's own rows, in lineage order (see `Store.scanThreads`), each read in its own transaction. */
export async function* scanThreads(context: SqlContext): AsyncIterable<ThreadSnapshot> {
  const branches = (
    await context.sql(
      "SELECT tenant_id, thread_id, parent_thread_id, fork_state_version FROM threads WHERE parent_thread_id IS NOT NULL",
    ).all()
  ).map(
    (row): BranchKey => ({
      tenantId: row.tenant_id as string,
      threadId: row.thread_id as string,
      parentThreadId: row.parent_thread_id as string,
      forkStateVersion: Number(row.fork_state_version ?? 0),
    }),
  );
  for await (const key of lineageScanOrder(roots(context), branches)) {
    const snapshot = await readSnapshot(context, key.tenantId, key.threadId);
    if (snapshot) yield snapshot;
  }
}

/** The root threads' keys, a keyset page at a time in (tenant_id, thread_id) order: the primary key's, bytewise as in SQLite. */
async function* roots(context: SqlContext): AsyncIterable<ThreadKey> {
  let after: ThreadKey | undefined;
  for (;;) {
    const keys = after
      ? await context.sql(
          `SELECT tenant_id, thread_id FROM threads WHERE parent_thread_id IS NULL AND (tenant_id, thread_id) > (?, ?)
           ORDER BY tenant_id, thread_id LIMIT ?`,
        ).all(after.tenantId, after.threadId, PAGE_SIZE)
      : await context.sql(
          "SELECT tenant_id, thread_id FROM threads WHERE parent_thread_id IS NULL ORDER BY tenant_id, thread_id LIMIT ?",
        ).all(PAGE_SIZE);
    for (const key of keys) {
      after = { tenantId: key.tenant_id as string, threadId: key.thread_id as string };
      yield after;
    }
    if (keys.length < PAGE_SIZE) return;
  }
}

/** One thread's own rows read in one transaction, so a concurrent write cannot tear the snapshot. */
async function readSnapshot(context: SqlContext, tenantId: string, threadId: string): Promise<ThreadSnapshot | undefined> {
  return context.transaction(async (tx) => {
    const thread = await tx.thread(tenantId, threadId);
    if (!thread) return undefined;
    const all = (sql: string) => tx.sql(sql).all(tenantId, threadId);
    return {
      thread,
      runs: (await all("SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at")).map(toRun),
      // The thread's run ids first, then their transitions by primary key: linear on every planner.
      transitions: (
        await tx.sql(
          `SELECT * FROM run_transitions
           WHERE tenant_id = ? AND run_id IN (SELECT run_id FROM runs WHERE tenant_id = ? AND thread_id = ?)
           ORDER BY run_id, ordinal`,
        ).all(tenantId, tenantId, threadId)
      ).map(toTransition),
      messages: (await all("SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? ORDER BY position")).map(toMessage),
      checkpoints: (await all("SELECT * FROM checkpoints WHERE tenant_id = ? AND thread_id = ? ORDER BY state_version")).map(
        toCheckpoint,
      ),
      operations: await tx.operationsOfThread(tenantId, threadId),
      // Like the transitions: the thread's run ids, then each run's steps in order.
      steps: (
        await tx.sql(
          `SELECT * FROM run_steps
           WHERE tenant_id = ? AND run_id IN (SELECT run_id FROM runs WHERE tenant_id = ? AND thread_id = ?)
           ORDER BY run_id, ordinal, step_id`,
        ).all(tenantId, tenantId, threadId)
      ).map(toStep),
    };
  }, { readOnly: true });
}
