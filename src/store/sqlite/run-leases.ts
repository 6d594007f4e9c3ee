/** Worker leases on runs in the SQLite adapter, and the runs recovery must take over. */
import type { RunRecord } from "../../core/index.js";
import { toRun, type Row } from "./rows.js";
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
