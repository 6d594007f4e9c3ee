/** Worker leases on runs in the SQLite adapter, and the runs recovery must take over. */
import type { RunRecord } from "../../core/index.js";
import type { ClaimQueuedRunsInput, TakeOverLeaseInput } from "../store.js";
import { toRun, type Row } from "../rows.js";
import type { SqliteContext } from "./sqlite-context.js";

/** Releases a worker's lease on a run that is not terminal. */
export function releaseLease(context: SqliteContext, tenantId: string, runId: string, owner: string): void {
  context.sql(
    `UPDATE runs SET lease_owner = NULL, lease_expires_at = 0
     WHERE tenant_id = ? AND run_id = ? AND lease_owner = ? AND status NOT IN ('completed', 'failed', 'cancelled')`,
  ).run(tenantId, runId, owner);
}

/** Extends every live lease a worker holds; the number renewed. */
export function renewLeases(context: SqliteContext, owner: string, leaseExpiresAt: number): number {
  return context.sql(
    `UPDATE runs SET lease_expires_at = ?
     WHERE lease_owner = ? AND status NOT IN ('completed', 'failed', 'cancelled')`,
  ).run(leaseExpiresAt, owner).changes;
}

/** Runs whose lease expired, and queued runs nobody picked up, oldest first. */
export function listRecoverableRuns(context: SqliteContext, now: number, orphanedBefore: number): RunRecord[] {
  const rows = context.sql(
    `SELECT * FROM runs WHERE status NOT IN ('completed', 'failed', 'cancelled')
       AND ((lease_expires_at IS NOT NULL AND lease_expires_at < ?)
         OR (status = 'queued' AND is_waiting = 0 AND lease_owner IS NULL AND created_at < ?))
     ORDER BY created_at`,
  ).all(now, orphanedBefore) as Row[];
  return rows.map(toRun);
}

/** Claims the oldest queued runs nobody holds; one writer at a time, so no run is claimed twice. */
export function claimQueuedRuns(context: SqliteContext, input: ClaimQueuedRunsInput): RunRecord[] {
  const tx = context.db.transaction(() => {
    const rows = context.sql(
      `SELECT * FROM runs WHERE status = 'queued' AND is_waiting = 0 AND lease_owner IS NULL
       ORDER BY created_at, run_id LIMIT ?`,
    ).all(input.limit) as Row[];
    return rows.map((row) =>
      context.setRunStatus(toRun(row), "running", input.now, {
        lease_owner: input.owner,
        lease_expires_at: input.leaseExpiresAt,
        started_at: row.started_at ?? input.now,
      }),
    );
  });
  return tx();
}

/** Takes a lost attempt's expired lease for its recoverer; one wins, the others find it live. */
export function takeOverLease(context: SqliteContext, input: TakeOverLeaseInput): boolean {
  return (
    context.sql(
      `UPDATE runs SET lease_owner = ?, lease_expires_at = ?
       WHERE tenant_id = ? AND run_id = ? AND attempt = ? AND status NOT IN ('queued', 'completed', 'failed', 'cancelled')
         AND lease_expires_at IS NOT NULL AND lease_expires_at < ?`,
    ).run(input.owner, input.leaseExpiresAt, input.tenantId, input.runId, input.attempt, input.now).changes === 1
  );
}

/** Runs a worker holds whose cancel was accepted. */
export function listCancelledRuns(context: SqliteContext, owner: string): RunRecord[] {
  const rows = context.sql(
    "SELECT * FROM runs WHERE lease_owner = ? AND status IN ('cancel_requested', 'cancelling') ORDER BY created_at",
  ).all(owner) as Row[];
  return rows.map(toRun);
}
