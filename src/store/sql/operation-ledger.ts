/** The operation ledger: an external action prepared, committed, and confirmed (DESIGN §6). */
import { hashIdempotencyKey, type OperationPhase, type OperationRecord } from "../../core/index.js";
import type {
  BeginCommitInput,
  BeginCommitResult,
  ConfirmOperationInput,
  FinishOperationInput,
  PrepareOperationInput,
  PrepareOperationResult,
} from "../store.js";
import { readLineage, readLineageOperations } from "./lineage.js";
import { toOperation } from "../rows.js";
import { StoreInvariantError } from "../store-invariant-error.js";
import type { SqlContext } from "./sql-context.js";

/** JSON text for a column, or NULL for a value that is absent. */
const jsonColumn = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/** One operation by id. */
export async function getOperation(context: SqlContext, tenantId: string, opId: string): Promise<OperationRecord | undefined> {
  const row = await context.sql("SELECT * FROM operations WHERE tenant_id = ? AND op_id = ?").get(tenantId, opId);
  return row ? toOperation(row) : undefined;
}

/** One operation by idempotency key: its full row, or the row reduced past its retention (which keeps the key's hash). */
async function operationByKey(context: SqlContext, tenantId: string, key: string): Promise<OperationRecord | undefined> {
  // Locked: a key is shared across threads, so two preparers on different threads take turns on its row.
  const row = await context
    .sql(`SELECT * FROM operations WHERE tenant_id = ? AND idempotency_key IN (?, ?)${context.forUpdate}`)
    .get(tenantId, key, hashIdempotencyKey(key));
  return row ? toOperation(row) : undefined;
}

/** Moves an operation from `from` to `to` by compare-and-set on its phase; false when it was not in `from`. */
async function setPhase(
  context: SqlContext,
  operation: OperationRecord,
  from: OperationPhase,
  to: OperationPhase,
  now: number,
  columns: Record<string, unknown> = {},
): Promise<boolean> {
  const names = Object.keys(columns);
  const assignments = names.map((name) => `, ${name} = ?`).join("");
  const result = await context.sql(
    `UPDATE operations SET phase = ?, updated_at = ?${assignments} WHERE tenant_id = ? AND op_id = ? AND phase = ?`,
  ).run(to, now, ...names.map((name) => columns[name]), operation.tenantId, operation.opId, from);
  return result.changes === 1;
}

/** Records an operation as prepared with its checkpoint, before the tool acts (DESIGN §6). */
export async function prepareOperation(context: SqlContext, input: PrepareOperationInput): Promise<PrepareOperationResult> {
  // The run and thread rows are locked first, so the key is read after any writer of this thread
  // committed; of two threads that both see the key free, the second insert is a unique
  // violation and the transaction runs again, to find its row.
  return context.transaction(async (tx): Promise<PrepareOperationResult> => {
    const run = await tx.run(input.tenantId, input.runId);
    const thread = await tx.thread(input.tenantId, input.threadId);
    const existing = await operationByKey(tx, input.tenantId, input.idempotencyKey);
    if (!run || run.status !== "running" || run.threadId !== input.threadId || thread?.status !== "active") {
      return { kind: "refused", operation: existing, reason: "run_not_running" };
    }
    if (existing?.phase === "committed") return { kind: "committed", operation: existing };
    if (existing?.phase === "outcome_unknown") return { kind: "refused", operation: existing, reason: "outcome_unknown" };
    if (existing?.phase === "prepared" || existing?.phase === "committing") {
      return { kind: "refused", operation: existing, reason: "in_progress" };
    }
    const advanced = await tx.advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "operation_prepared",
        runId: input.runId,
        createdAt: input.now,
      },
      {},
    );
    await tx.updateRun(run, { state_version: advanced.thread.stateVersion });
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
      // A reduced row prepared again is a full row again.
      idempotency_key: input.idempotencyKey,
      reduced_at: null,
      result_kind: null,
    };
    if (existing) {
      if (!(await setPhase(tx, existing, existing.phase, "prepared", input.now, taken))) {
        throw new StoreInvariantError("compare_and_set_failed", existing.opId, `operation phase compare-and-set failed for ${existing.opId}`);
      }
    } else {
      await tx.sql(
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
    const operation = (await getOperation(tx, input.tenantId, existing?.opId ?? input.opId))!;
    return { kind: "prepared", operation, checkpoint: advanced.checkpoint, thread: advanced.thread };
  }, { rerunOnConflictWith: ["operations_by_idempotency_key", "operations_pkey"] });
}

/** Hands a prepared operation over to commit, unless the run stopped running. */
export async function beginCommit(
  context: SqlContext,
  input: BeginCommitInput,
): Promise<BeginCommitResult> {
  return context.transaction(async (tx): Promise<BeginCommitResult> => {
    // The run's row is locked first, then the operation read: a cancel accepted before this
    // point is seen here, and one accepted after it finds the commit handed over.
    const run = await tx.run(input.tenantId, input.runId);
    const operation = await getOperation(tx, input.tenantId, input.opId);
    const isHandedOver =
      operation?.phase === "prepared" &&
      operation.runId === input.runId &&
      run?.status === "running" &&
      (input.attempt === undefined || run.attempt === input.attempt) &&
      (await setPhase(tx, operation, "prepared", "committing", input.now, { commit_attempts: operation.commitAttempts + 1 }));
    if (!isHandedOver) return { kind: "refused", operation: await getOperation(tx, input.tenantId, input.opId), runStatus: run?.status };
    await tx.updateRun(run, { active_operation: operation.opId });
    return { kind: "committing", operation: (await getOperation(tx, input.tenantId, input.opId))! };
  });
}

/** Records a committing operation's outcome. */
export async function finishOperation(context: SqlContext, input: FinishOperationInput): Promise<OperationRecord | undefined> {
  return context.transaction(async (tx) => {
    const operation = await getOperation(tx, input.tenantId, input.opId);
    const columns =
      input.phase === "committed"
        ? { result: jsonColumn(input.result), error: null }
        : { result: null, error: input.error ?? null };
    if (!operation || !(await setPhase(tx, operation, "committing", input.phase, input.now, columns))) return undefined;
    await tx.sql(
      "UPDATE runs SET active_operation = NULL WHERE tenant_id = ? AND run_id = ? AND active_operation = ?",
    ).run(operation.tenantId, operation.runId, operation.opId);
    return getOperation(tx, input.tenantId, input.opId);
  });
}

/** Abandons a prepared operation that never began to commit. */
export async function abandonOperation(
  context: SqlContext,
  input: { tenantId: string; opId: string; now: number },
): Promise<OperationRecord | undefined> {
  return context.transaction(async (tx) => {
    const operation = await getOperation(tx, input.tenantId, input.opId);
    if (!operation || !(await setPhase(tx, operation, "prepared", "abandoned", input.now))) return undefined;
    return getOperation(tx, input.tenantId, input.opId);
  });
}

/** Marks a run's committing operations `outcome_unknown`, as recovery finds them. */
export async function markOutcomesUnknown(context: SqlContext, tenantId: string, runId: string, now: number): Promise<OperationRecord[]> {
  return context.transaction(async (tx) => {
    const rows = await tx.sql(
      `SELECT * FROM operations${tx.dialect.throughIndex("operations_committing")}
       WHERE tenant_id = ? AND run_id = ? AND phase = 'committing' ORDER BY created_at, op_id`,
    ).all(tenantId, runId);
    const marked: OperationRecord[] = [];
    for (const operation of rows.map(toOperation)) {
      if (await setPhase(tx, operation, "committing", "outcome_unknown", now)) marked.push((await getOperation(tx, tenantId, operation.opId))!);
    }
    return marked;
  });
}

/** Records a person's confirmation of an unknown outcome, with its checkpoint. */
export async function confirmOperation(context: SqlContext, input: ConfirmOperationInput): Promise<OperationRecord | undefined> {
  return context.transaction(async (tx) => {
    const operation = await getOperation(tx, input.tenantId, input.opId);
    const thread = await tx.thread(input.tenantId, input.threadId);
    if (!operation || operation.threadId !== input.threadId || operation.phase !== "outcome_unknown" || !thread) {
      return undefined;
    }
    const isCommitted = input.outcome === "committed";
    const columns = { result: isCommitted ? jsonColumn(input.result) : null };
    if (!(await setPhase(tx, operation, "outcome_unknown", isCommitted ? "committed" : "abandoned", input.now, columns))) {
      return undefined;
    }
    await tx.advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "operation_confirmed",
        createdAt: input.now,
      },
      {},
    );
    return getOperation(tx, input.tenantId, input.opId);
  });
}

/** The lineage's operations, read in one transaction. */
export async function listOperations(context: SqlContext, tenantId: string, threadId: string): Promise<OperationRecord[]> {
  return context.transaction(
    async (tx) => {
      const levels = await readLineage(tx.sql, tenantId, threadId);
      return levels ? readLineageOperations(tx.sql, tenantId, levels) : [];
    },
    { readOnly: true },
  );
}
