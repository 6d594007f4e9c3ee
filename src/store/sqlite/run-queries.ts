/** Run reads in the SQLite adapter: by idempotency key, a thread's live runs, threads with waiting runs. */
import type { RunRecord } from "../../core/index.js";
import { toRun, type Row } from "../rows.js";
import type { SqliteContext } from "./sqlite-context.js";

/** The run created with an idempotency key, if any. */
export function findRunByIdempotencyKey(context: SqliteContext, tenantId: string, key: string): RunRecord | undefined {
  const row = context.sql("SELECT * FROM runs WHERE tenant_id = ? AND idempotency_key = ?").get(tenantId, key) as
    | Row
    | undefined;
  return row ? toRun(row) : undefined;
}

/** The thread's runs not yet terminal, oldest first. */
export function listActiveRuns(context: SqliteContext, tenantId: string, threadId: string): RunRecord[] {
  const rows = context.sql(
    `SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ? AND status NOT IN ('completed', 'failed', 'cancelled')
     ORDER BY created_at`,
  ).all(tenantId, threadId) as Row[];
  return rows.map(toRun);
}

/** Idle active threads that have a waiting run to admit. */
export function listThreadsWithWaitingRuns(context: SqliteContext): { tenantId: string; threadId: string }[] {
  const rows = context.sql(
    `SELECT DISTINCT r.tenant_id, r.thread_id FROM runs r
       JOIN threads t ON t.tenant_id = r.tenant_id AND t.thread_id = r.thread_id
     WHERE r.is_waiting = 1 AND r.status = 'queued' AND t.active_run_id IS NULL AND t.status = 'active'`,
  ).all() as Row[];
  return rows.map((row) => ({ tenantId: row.tenant_id as string, threadId: row.thread_id as string }));
}
