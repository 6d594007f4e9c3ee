/** The operation ledger in the SQLite adapter: an external action prepared, committed, and confirmed (DESIGN §6). */
import type { OperationPhase, OperationRecord } from "../../core/index.js";
import type {
  BeginCommitInput,
  BeginCommitResult,
  ConfirmOperationInput,
  FinishOperationInput,
  PrepareOperationInput,
  PrepareOperationResult,
} from "../store.js";
import { readLineage, readLineageOperations } from "./lineage.js";
import { toOperation, type Row } from "../rows.js";
import type { SqliteContext } from "./sqlite-context.js";

/** JSON text for a column, or NULL for a value that is absent. */
const jsonColumn = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/** One operation by id. */
export function getOperation(context: SqliteContext, tenantId: string, opId: string): OperationRecord | undefined {
  const row = context.sql("SELECT * FROM operations WHERE tenant_id = ? AND op_id = ?").get(tenantId, opId) as
    | Row
    | undefined;
  return row ? toOperation(row) : undefined;
}

/** One operation by idempotency key. */
function operationByKey(context: SqliteContext, tenantId: string, key: string): OperationRecord | undefined {
  const row = context.sql("SELECT * FROM operations WHERE tenant_id = ? AND idempotency_key = ?").get(tenantId, key) as
    | Row
    | undefined;
  return row ? toOperation(row) : undefined;
}

/** Moves an operation from `from` to `to` by compare-and-set on its phase; false when it was not in `from`. */
function setPhase(
  context: SqliteContext,
  operation: OperationRecord,
  from: OperationPhase,
  to: OperationPhase,
  now: number,
  columns: Record<string, unknown> = {},
): boolean {
  const names = Object.keys(columns);
  const assignments = names.map((name) => `, ${name} = ?`).join("");
  const result = context.sql(
    `UPDATE operations SET phase = ?, updated_at = ?${assignments} WHERE tenant_id = ? AND op_id = ? AND phase = ?`,
  ).run(to, now, ...names.map((name) => columns[name]), operation.tenantId, operation.opId, from);
  return result.changes === 1;
}

/** Records an operation as prepared with its checkpoint, before the tool acts (DESIGN §6). */
export function prepareOperation(context: SqliteContext, input: PrepareOperationInput): PrepareOperationResult {
  // IMMEDIATE: the write lock is taken before the key is read, so two connections cannot both see it free.
  const tx = context.db.transaction((): PrepareOperationResult => {
    const existing = operationByKey(context, input.tenantId, input.idempotencyKey);
    const run = context.run(input.tenantId, input.runId);
    const thread = context.thread(input.tenantId, input.threadId);
    if (!run || run.status !== "running" || run.threadId !== input.threadId || thread?.status !== "active") {
      return { kind: "refused", operation: existing, reason: "run_not_running" };
    }
    if (existing?.phase === "committed") return { kind: "committed", operation: existing };
    if (existing?.phase === "outcome_unknown") return { kind: "refused", operation: existing, reason: "outcome_unknown" };
    if (existing?.phase === "prepared" || existing?.phase === "committing") {
      return { kind: "refused", operation: existing, reason: "in_progress" };
    }
    const advanced = context.advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "operation_prepared",
        runId: input.runId,
        createdAt: input.now,
      },
      {},
    );
    context.updateRun(run, { state_version: advanced.thread.stateVersion });
    const taken = {
      thread_id: input.threadId,
      run_id: input.runId,
      tool_name: input.toolName,
      tool_call_id: input.toolCallId,
      input: input.input,
      preview: jsonColumn(input.preview),
      result: null,
      error: null,
      // A failed or abandoned attempt is known not to have acted: the count is per preparation.
      commit_attempts: 0,
    };
    if (existing) {
      if (!setPhase(context, existing, existing.phase, "prepared", input.now, taken)) {
        throw new Error(`operation phase compare-and-set failed for ${existing.opId}`);
      }
    } else {
      context.sql(
        `INSERT INTO operations (tenant_id, op_id, thread_id, run_id, tool_name, tool_call_id, idempotency_key, phase,
           input, preview, result, error, commit_attempts, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'prepared', ?, ?, NULL, NULL, 0, ?, ?)`,
      ).run(
        input.tenantId,
        input.opId,
        input.threadId,
        input.runId,
        input.toolName,
        input.toolCallId,
        input.idempotencyKey,
        input.input,
        taken.preview,
        input.now,
        input.now,
      );
    }
    const operation = getOperation(context, input.tenantId, existing?.opId ?? input.opId)!;
    return { kind: "prepared", operation, checkpoint: advanced.checkpoint, thread: advanced.thread };
  });
  return tx.immediate();
}

/** Hands a prepared operation over to commit, unless the run stopped running. */
export function beginCommit(context: SqliteContext, input: BeginCommitInput): BeginCommitResult {
  const tx = context.db.transaction((): BeginCommitResult => {
    const operation = getOperation(context, input.tenantId, input.opId);
    const run = context.run(input.tenantId, input.runId);
    // The run's status is read in the same transaction as the phase is set: a cancel accepted
    // before this point is seen here, and one accepted after it finds the commit handed over.
    const isHandedOver =
      operation?.phase === "prepared" &&
      operation.runId === input.runId &&
      run?.status === "running" &&
      (input.attempt === undefined || run.attempt === input.attempt) &&
      setPhase(context, operation, "prepared", "committing", input.now, { commit_attempts: operation.commitAttempts + 1 });
    if (!isHandedOver) return { kind: "refused", operation, runStatus: run?.status };
    context.updateRun(run, { active_operation: operation.opId });
    return { kind: "committing", operation: getOperation(context, input.tenantId, input.opId)! };
  });
  return tx.immediate();
}

/** Records a committing operation's outcome. */
export function finishOperation(context: SqliteContext, input: FinishOperationInput): OperationRecord | undefined {
  const tx = context.db.transaction(() => {
    const operation = getOperation(context, input.tenantId, input.opId);
    const columns =
      input.phase === "committed"
        ? { result: jsonColumn(input.result), error: null }
        : { result: null, error: input.error ?? null };
    if (!operation || !setPhase(context, operation, "committing", input.phase, input.now, columns)) return undefined;
    context.sql(
      "UPDATE runs SET active_operation = NULL WHERE tenant_id = ? AND run_id = ? AND active_operation = ?",
    ).run(operation.tenantId, operation.runId, operation.opId);
    return getOperation(context, input.tenantId, input.opId);
  });
  return tx.immediate();
}

/** Abandons a prepared operation that never began to commit. */
export function abandonOperation(context: SqliteContext, input: { tenantId: string; opId: string; now: number }): OperationRecord | undefined {
  const tx = context.db.transaction(() => {
    const operation = getOperation(context, input.tenantId, input.opId);
    if (!operation || !setPhase(context, operation, "prepared", "abandoned", input.now)) return undefined;
    return getOperation(context, input.tenantId, input.opId);
  });
  return tx.immediate();
}

/** Marks a run's committing operations `outcome_unknown`, as recovery finds them. */
export function markOutcomesUnknown(context: SqliteContext, tenantId: string, runId: string, now: number): OperationRecord[] {
  const tx = context.db.transaction(() => {
    const rows = context.sql(
      "SELECT * FROM operations WHERE tenant_id = ? AND run_id = ? AND phase = 'committing' ORDER BY created_at, op_id",
    ).all(tenantId, runId) as Row[];
    const marked: OperationRecord[] = [];
    for (const operation of rows.map(toOperation)) {
      if (setPhase(context, operation, "committing", "outcome_unknown", now)) marked.push(getOperation(context, tenantId, operation.opId)!);
    }
    return marked;
  });
  return tx.immediate();
}

/** Records a person's confirmation of an unknown outcome, with its checkpoint. */
export function confirmOperation(context: SqliteContext, input: ConfirmOperationInput): OperationRecord | undefined {
  const tx = context.db.transaction(() => {
    const operation = getOperation(context, input.tenantId, input.opId);
    const thread = context.thread(input.tenantId, input.threadId);
    if (!operation || operation.threadId !== input.threadId || operation.phase !== "outcome_unknown" || !thread) {
      return undefined;
    }
    const isCommitted = input.outcome === "committed";
    const columns = { result: isCommitted ? jsonColumn(input.result) : null };
    if (!setPhase(context, operation, "outcome_unknown", isCommitted ? "committed" : "abandoned", input.now, columns)) {
      return undefined;
    }
    context.advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "operation_confirmed",
        createdAt: input.now,
      },
      {},
    );
    return getOperation(context, input.tenantId, input.opId);
  });
  return tx.immediate();
}

/** The lineage's operations, read in one transaction. */
export function listOperations(context: SqliteContext, tenantId: string, threadId: string): OperationRecord[] {
  return context.db.transaction(() => {
    const levels = readLineage(context.sql, tenantId, threadId);
    return levels ? readLineageOperations(context.sql, tenantId, levels) : [];
  })();
}
