/** Whole-thread snapshots from the SQLite adapter, as `tidemark check` reads them. */
import type { ThreadSnapshot } from "../store.js";
import { readLineage, readLineageCheckpoints, readLineageMessages } from "./lineage.js";
import { toCheckpoint, toMessage, toRun, toTransition, type Row } from "../rows.js";
import type { SqliteContext } from "./sqlite-context.js";

/** Every thread's snapshot, one at a time, each read in its own transaction. */
export async function* scanThreads(context: SqliteContext): AsyncIterable<ThreadSnapshot> {
  const keys = context.sql("SELECT tenant_id, thread_id FROM threads ORDER BY tenant_id, thread_id").all() as Row[];
  for (const key of keys) {
    const snapshot = readSnapshot(context, key.tenant_id as string, key.thread_id as string);
    if (snapshot) yield snapshot;
  }
}

/** One thread's rows read in one transaction, so a concurrent write cannot tear the snapshot. */
function readSnapshot(context: SqliteContext, tenantId: string, threadId: string): ThreadSnapshot | undefined {
  return context.db.transaction(() => {
    const thread = context.thread(tenantId, threadId);
    if (!thread) return undefined;
    const all = (sql: string) => context.sql(sql).all(tenantId, threadId) as Row[];
    return {
      thread,
      runs: all("SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at").map(toRun),
      transitions: all(
        `SELECT t.* FROM run_transitions t JOIN runs r ON r.tenant_id = t.tenant_id AND r.run_id = t.run_id
         WHERE r.tenant_id = ? AND r.thread_id = ? ORDER BY t.run_id, t.ordinal`,
      ).map(toTransition),
      messages: all("SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? ORDER BY position").map(toMessage),
      checkpoints: all("SELECT * FROM checkpoints WHERE tenant_id = ? AND thread_id = ? ORDER BY state_version").map(toCheckpoint),
      operations: context.operationsOfThread(tenantId, threadId),
      ...inherited(context, tenantId, threadId),
    };
  })();
}

/** A branch's shared prefix, as `tidemark check` needs it; nothing for a root thread. */
function inherited(context: SqliteContext, tenantId: string, threadId: string): Pick<ThreadSnapshot, "inheritedCheckpoints" | "inheritedMessages"> {
  const levels = readLineage(context.sql, tenantId, threadId);
  if (!levels || levels.length < 2) return {};
  const ancestors = levels.slice(0, -1);
  return {
    inheritedCheckpoints: readLineageCheckpoints(context.sql, tenantId, ancestors),
    inheritedMessages: readLineageMessages(context.sql, tenantId, levels).filter((message) => message.threadId !== threadId),
  };
}
