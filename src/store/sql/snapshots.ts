/** Whole-thread snapshots, as `tidemark check` reads them. */
import type { ThreadSnapshot } from "../store.js";
import { readLineage, readLineageCheckpoints, readLineageMessages } from "./lineage.js";
import { toCheckpoint, toMessage, toRun, toTransition } from "../rows.js";
import type { SqlContext } from "./sql-context.js";

/** Thread keys read per page: the scan holds one page of keys, never the whole table. */
const PAGE_SIZE = 100;

/** Every thread's snapshot, one at a time, each read in its own transaction. */
export async function* scanThreads(context: SqlContext): AsyncIterable<ThreadSnapshot> {
  // Keyset pages in (tenant_id, thread_id) order: the primary key's, bytewise as in SQLite.
  let after: { tenantId: string; threadId: string } | undefined;
  for (;;) {
    const keys = after
      ? await context.sql(
          "SELECT tenant_id, thread_id FROM threads WHERE (tenant_id, thread_id) > (?, ?) ORDER BY tenant_id, thread_id LIMIT ?",
        ).all(after.tenantId, after.threadId, PAGE_SIZE)
      : await context.sql("SELECT tenant_id, thread_id FROM threads ORDER BY tenant_id, thread_id LIMIT ?").all(PAGE_SIZE);
    for (const key of keys) {
      after = { tenantId: key.tenant_id as string, threadId: key.thread_id as string };
      const snapshot = await readSnapshot(context, after.tenantId, after.threadId);
      if (snapshot) yield snapshot;
    }
    if (keys.length < PAGE_SIZE) return;
  }
}

/** One thread's rows read in one transaction, so a concurrent write cannot tear the snapshot. */
async function readSnapshot(context: SqlContext, tenantId: string, threadId: string): Promise<ThreadSnapshot | undefined> {
  return context.transaction(async (tx) => {
    const thread = await tx.thread(tenantId, threadId);
    if (!thread) return undefined;
    const all = (sql: string) => tx.sql(sql).all(tenantId, threadId);
    return {
      thread,
      runs: (await all("SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at")).map(toRun),
      transitions: (
        await all(
          `SELECT t.* FROM run_transitions t JOIN runs r ON r.tenant_id = t.tenant_id AND r.run_id = t.run_id
           WHERE r.tenant_id = ? AND r.thread_id = ? ORDER BY t.run_id, t.ordinal`,
        )
      ).map(toTransition),
      messages: (await all("SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? ORDER BY position")).map(toMessage),
      checkpoints: (await all("SELECT * FROM checkpoints WHERE tenant_id = ? AND thread_id = ? ORDER BY state_version")).map(
        toCheckpoint,
      ),
      operations: await tx.operationsOfThread(tenantId, threadId),
      ...(await inherited(tx, tenantId, threadId)),
    };
  }, { readOnly: true });
}

/** A branch's shared prefix, as `tidemark check` needs it; nothing for a root thread. */
async function inherited(
  context: SqlContext,
  tenantId: string,
  threadId: string,
): Promise<Pick<ThreadSnapshot, "inheritedCheckpoints" | "inheritedMessages">> {
  const levels = await readLineage(context.sql, tenantId, threadId);
  if (!levels || levels.length < 2) return {};
  const ancestors = levels.slice(0, -1);
  return {
    inheritedCheckpoints: await readLineageCheckpoints(context.sql, tenantId, ancestors),
    inheritedMessages: (await readLineageMessages(context.sql, tenantId, levels)).filter((message) => message.threadId !== threadId),
  };
}
