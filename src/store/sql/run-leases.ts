/** Worker leases on runs, and the runs recovery must take over. */
import type { RunRecord } from "../../core/index.js";
import type { ClaimQueuedRunsInput, TakeOverLeaseInput } from "../store.js";
import { toRun } from "../rows.js";
import type { SqlContext } from "./sql-context.js";

/**
 * Takes a lost attempt's expired lease for its recoverer: one statement, so of two recoverers the
 * second re-reads the row after the first and finds the lease live.
 */
export async function takeOverLease(context: SqlContext, input: TakeOverLeaseInput): Promise<boolean> {
  const result = await context.sql(
    `UPDATE runs SET lease_owner = ?, lease_expires_at = ?
     WHERE tenant_id = ? AND run_id = ? AND attempt = ? AND status NOT IN ('queued', 'completed', 'failed', 'cancelled')
       AND lease_expires_at IS NOT NULL AND lease_expires_at < ?`,
  ).run(input.owner, input.leaseExpiresAt, input.tenantId, input.runId, input.attempt, input.now);
  return result.changes === 1;
}

/** Releases a worker's lease on a run that is not terminal. */
export async function releaseLease(context: SqlContext, tenantId: string, runId: string, owner: string): Promise<void> {
  await context.sql(
    `UPDATE runs SET lease_owner = NULL, lease_expires_at = 0
     WHERE tenant_id = ? AND run_id = ? AND lease_owner = ? AND status NOT IN ('completed', 'failed', 'cancelled')`,
  ).run(tenantId, runId, owner);
}

/** Extends the leases a worker holds on unfinished runs (only those of `runs` when given); the number renewed. */
export async function renewLeases(
  context: SqlContext,
  owner: string,
  leaseExpiresAt: number,
  runs?: readonly { tenantId: string; runId: string }[],
): Promise<number> {
  if (runs?.length === 0) return 0;
  // Row values against a VALUES list: the same text on SQLite (3.15+) and PostgreSQL.
  const only = runs ? ` AND (tenant_id, run_id) IN (VALUES ${runs.map(() => "(?, ?)").join(", ")})` : "";
  const result = await context.sql(
    `UPDATE runs SET lease_expires_at = ?
     WHERE lease_owner = ? AND status NOT IN ('completed', 'failed', 'cancelled')${only}`,
  ).run(leaseExpiresAt, owner, ...(runs ?? []).flatMap((run) => [run.tenantId, run.runId]));
  return result.changes;
}

/** Runs whose lease expired, and queued runs nobody picked up, oldest first. */
export async function listRecoverableRuns(context: SqlContext, now: number, orphanedBefore: number): Promise<RunRecord[]> {
  const rows = await context.sql(
    `SELECT * FROM runs WHERE status NOT IN ('completed', 'failed', 'cancelled')
       AND ((lease_expires_at IS NOT NULL AND lease_expires_at < ?)
         OR (status = 'queued' AND is_waiting = 0 AND lease_owner IS NULL AND created_at < ?))
     ORDER BY created_at`,
  ).all(now, orphanedBefore);
  return rows.map(toRun);
}

/**
 * Claims the oldest queued runs nobody holds. Each worker locks the rows it takes and skips those
 * another holds (SKIP LOCKED), so concurrent workers neither wait for each other nor claim a run twice.
 */
export async function claimQueuedRuns(context: SqlContext, input: ClaimQueuedRunsInput): Promise<RunRecord[]> {
  return context.transaction(async (tx) => {
    const rows = await tx.sql(
      `SELECT * FROM runs${tx.dialect.throughIndex("runs_claimable")} WHERE status = 'queued' AND is_waiting = 0 AND lease_owner IS NULL
       ORDER BY created_at, run_id LIMIT ?${tx.dialect.forUpdateSkipLocked}`,
    ).all(input.limit);
    const claimed: RunRecord[] = [];
    for (const row of rows) {
      claimed.push(
        await tx.setRunStatus(toRun(row), "running", input.now, {
          lease_owner: input.owner,
          lease_expires_at: input.leaseExpiresAt,
          started_at: row.started_at ?? input.now,
        }),
      );
    }
    return claimed;
  });
}

/** Runs a worker holds whose cancel was accepted. */
export async function listCancelledRuns(context: SqlContext, owner: string): Promise<RunRecord[]> {
  const rows = await context.sql(
    `SELECT * FROM runs${context.dialect.throughIndex("runs_by_lease_owner")}
     WHERE lease_owner = ? AND status IN ('cancel_requested', 'cancelling') AND status NOT IN ('completed', 'failed', 'cancelled')
     ORDER BY created_at`,
  ).all(owner);
  return rows.map(toRun);
}
