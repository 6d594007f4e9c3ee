/** Run traces in the SQLite adapter. */
import type { TraceRecord } from "../../core/index.js";
import { toTrace, type Row } from "../rows.js";
import type { SqliteContext } from "./sqlite-context.js";

/** Appends one trace record. */
export function appendTrace(context: SqliteContext, trace: TraceRecord): void {
  context.sql("INSERT INTO traces (trace_id, tenant_id, run_id, thread_id, kind, data, at) VALUES (?, ?, ?, ?, ?, ?, ?)").run(
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
export function listTraces(context: SqliteContext, tenantId: string, runId: string): TraceRecord[] {
  const rows = context.sql("SELECT * FROM traces WHERE tenant_id = ? AND run_id = ? ORDER BY at, rowid").all(
    tenantId,
    runId,
  ) as Row[];
  return rows.map(toTrace);
}
