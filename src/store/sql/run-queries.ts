/** Run reads: by idempotency key, a thread's live runs, threads with waiting runs, queued counts. */
import type { RunRecord } from "../../core/index.js";
import { toRun } from "../rows.js";
import type { QueuedRunCounts } from "../store.js";
import type { SqlContext } from "./sql-context.js";

/** The run created with an idempotency key, if any. */
export async function findRunByIdempotencyKey(context: SqlContext, tenantId: string, key: string): Promise<RunRecord | undefined> {
  const row = await context.sql("SELECT * FROM runs WHERE tenant_id = ? AND idempotency_key = ?").get(tenantId, key);
  return row ? toRun(row) : undefined;
}

/** The thread's runs not yet terminal, oldest first. */
export async function listActiveRuns(context: SqlContext, tenantId: string, threadId: string): Promise<RunRecord[]> {
  const rows = await context.sql(
    `SELECT * FROM runs${context.dialect.throughIndex("runs_unfinished_by_tenant")}
     WHERE tenant_id = ? AND thread_id = ? AND status NOT IN ('completed', 'failed', 'cancelled')
     ORDER BY created_at`,
  ).all(tenantId, threadId);
  return rows.map(toRun);
}

/** Idle active threads that have a waiting run to admit. */
export async function listThreadsWithWaitingRuns(context: SqlContext): Promise<{ tenantId: string; threadId: string }[]> {
  const rows = await context.sql(
    `SELECT DISTINCT r.tenant_id, r.thread_id FROM runs r
       JOIN threads t ON t.tenant_id = r.tenant_id AND t.thread_id = r.thread_id
     WHERE r.is_waiting = 1 AND r.status = 'queued' AND t.active_run_id IS NULL AND t.status = 'active'`,
  ).all();
  return rows.map((row) => ({ tenantId: row.tenant_id as string, threadId: row.thread_id as string }));
}

/** Queued runs across every tenant, by what they wait for (read through the partial index of unfinished runs). */
export async function countQueuedRuns(context: SqlContext): Promise<QueuedRunCounts> {
  const row = (await context.sql(
    `SELECT count(*) AS queued, coalesce(sum(is_waiting), 0) AS waiting FROM runs
     WHERE status = 'queued' AND status NOT IN ('completed', 'failed', 'cancelled')`,
  ).get()) as { queued: number | string; waiting: number | string } | undefined;
  const queued = Number(row?.queued ?? 0);
  const waiting = Number(row?.waiting ?? 0);
  return { unclaimed: queued - waiting, waiting };
}
