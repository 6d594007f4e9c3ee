/** Run traces in the PostgreSQL adapter. */
import type { TraceRecord } from "../../core/index.js";
import { toTrace } from "../rows.js";
import type { PgContext } from "./pg-context.js";

/** Appends one trace record. */
export async function appendTrace(context: PgContext, trace: TraceRecord): Promise<void> {
  await context.sql("INSERT INTO traces (trace_id, tenant_id, run_id, thread_id, kind, data, at) VALUES (?, ?, ?, ?, ?, ?, ?)").run(
    trace.traceId,
    trace.tenantId,
    trace.runId,
    trace.threadId,
    trace.kind,
    JSON.stringify(trace.data),
    trace.at,
  );
}

/** A run's traces in order. */
export async function listTraces(context: PgContext, tenantId: string, runId: string): Promise<TraceRecord[]> {
  // No rowid here: ties on `at` fall back to the row's place in the heap, which is insertion order
  // for this append-only table (traces are never updated or deleted).
  const rows = await context.sql("SELECT * FROM traces WHERE tenant_id = ? AND run_id = ? ORDER BY at, seq").all(tenantId, runId);
  return rows.map(toTrace);
}
