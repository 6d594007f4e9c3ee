/** Run traces. */
import type { TraceRecord } from "../../core/index.js";
import { toTrace } from "../rows.js";
import type { SqlContext } from "./sql-context.js";

/** Appends one trace record. */
export async function appendTrace(context: SqlContext, trace: TraceRecord): Promise<void> {
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
export async function listTraces(context: SqlContext, tenantId: string, runId: string): Promise<TraceRecord[]> {
  // Ties on `at` keep the order in which they were appended.
  const rows = await context.sql(`SELECT * FROM traces WHERE tenant_id = ? AND run_id = ? ORDER BY at, ${context.dialect.insertionOrder}`).all(tenantId, runId);
  return rows.map(toTrace);
}
