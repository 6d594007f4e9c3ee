/**
 * A run's plan (DESIGN §11): its steps' bookkeeping rows, a step's own work recorded as a
 * transition, and the steps a run's end closes.
 *
 * A step's status is the executor's bookkeeping and is sticky once terminal; its completion is
 * durable only through the checkpoint written with its result or its message, in one transaction.
 * Every write here locks the run's row first, so a finish that closes the run's steps and a late
 * bookkeeping write of the same run take turns. Every statement reads one run's rows through the
 * primary key or `run_steps_by_ordinal`: the cost of a step does not grow with the plan.
 */
import { addStats, canPublish, isTerminalStatus, stepStatusAtRunEnd, TERMINAL_STEP_STATUSES, UNFINISHED_STEP_STATUSES, type RunRecord, type RunStepRecord, type TerminalRunStatus } from "../../core/index.js";
import { toStep } from "../rows.js";
import type { CompleteStepInput, CompleteStepResult, SaveStepsInput, StepUpdate } from "../store.js";
import type { SqlContext } from "./sql-context.js";

/** The existing row's status is terminal (inside an upsert's DO UPDATE). */
const IS_TERMINAL = `run_steps.status IN (${TERMINAL_STEP_STATUSES.map((status) => `'${status}'`).join(", ")})`;

/** The next ordinal of a run: one past its last, read backwards on `run_steps_by_ordinal` (bind tenant, run). */
const NEXT_ORDINAL = "COALESCE((SELECT ordinal + 1 FROM run_steps WHERE tenant_id = ? AND run_id = ? ORDER BY ordinal DESC LIMIT 1), 0)";

/** The optional fields of a {@link StepUpdate} and their columns, in the order of the insert's values. */
const STEP_FIELDS = [
  ["ordinal", "ordinal"],
  ["parentStepId", "parent_step_id"],
  ["title", "title"],
  ["dependsOn", "depends_on"],
  ["inputHash", "input_hash"],
  ["startedAt", "started_at"],
  ["endedAt", "ended_at"],
  ["checkpointId", "checkpoint_id"],
  ["messageId", "message_id"],
  ["result", "result"],
  ["reusedFromRunId", "reused_from_run_id"],
  ["error", "error"],
] as const satisfies readonly (readonly [Exclude<keyof StepUpdate, "stepId" | "status">, string])[];

/**
 * How an update sets a column it names on an existing row. A terminal row keeps its end (status,
 * time, reason) and only fills in what it lacks; the durable record (checkpoint, message, result) is
 * written once, by whichever write recorded it first.
 */
function assignment(column: string): string {
  if (column === "status" || column === "ended_at" || column === "error") {
    return `${column} = CASE WHEN ${IS_TERMINAL} THEN run_steps.${column} ELSE excluded.${column} END`;
  }
  if (column === "checkpoint_id" || column === "message_id" || column === "result") {
    return `${column} = COALESCE(run_steps.${column}, excluded.${column})`;
  }
  return `${column} = CASE WHEN ${IS_TERMINAL} THEN COALESCE(run_steps.${column}, excluded.${column}) ELSE excluded.${column} END`;
}

/**
 * An update as a terminal run takes it: a run that ended shows no unfinished step, so a late
 * update that would leave one open closes it as the run's end did (at the run's end time).
 */
function asOfRun(update: StepUpdate, run: RunRecord): StepUpdate {
  if (!isTerminalStatus(run.status) || TERMINAL_STEP_STATUSES.includes(update.status)) return update;
  return { ...update, status: stepStatusAtRunEnd(update.status, run.status), endedAt: update.endedAt ?? run.endedAt };
}

/** The columns an update names (beyond status), in {@link STEP_FIELDS} order. */
function givenColumns(update: StepUpdate): string[] {
  return STEP_FIELDS.filter(([field]) => update[field] !== undefined).map(([, column]) => column);
}

/** The rows one statement writes at most (a bound on the number of distinct statement texts too). */
const MAX_ROWS_PER_STATEMENT = 64;

/**
 * Splits updates into batches one statement can write: the same columns given, each step once,
 * and an ordinal given (a row without one reads the next ordinal, which a batch could not see grow).
 */
function* batchesOf(updates: readonly StepUpdate[]): Generator<StepUpdate[]> {
  let batch: StepUpdate[] = [];
  let signature = "";
  const stepIds = new Set<string>();
  for (const update of updates) {
    const columns = givenColumns(update);
    const key = columns.join(",");
    const joins = batch.length > 0 && batch.length < MAX_ROWS_PER_STATEMENT && key === signature && columns.includes("ordinal") && !stepIds.has(update.stepId);
    if (!joins && batch.length > 0) {
      yield batch;
      batch = [];
      stepIds.clear();
    }
    batch.push(update);
    stepIds.add(update.stepId);
    signature = key;
  }
  if (batch.length > 0) yield batch;
}

/**
 * Upserts steps' rows of `run` that give the same columns, in one statement (see {@link saveSteps}):
 * a plan's forty rows hold the run's lock for one round trip, not forty.
 */
async function upsertSteps(tx: SqlContext, run: RunRecord, updates: readonly StepUpdate[]): Promise<void> {
  const given = givenColumns(updates[0]!);
  const [, ...rest] = STEP_FIELDS;
  const row = `(?, ?, ?, ?, ?, COALESCE(?, ${NEXT_ORDINAL}), ${rest.map(() => "?").join(", ")})`;
  const value = (update: StepUpdate, field: (typeof STEP_FIELDS)[number][0]): unknown => {
    if (field === "dependsOn") return JSON.stringify(update.dependsOn ?? []);
    return update[field] ?? null;
  };
  await tx.sql(
    `INSERT INTO run_steps (tenant_id, run_id, thread_id, step_id, status, ${STEP_FIELDS.map(([, column]) => column).join(", ")})
     VALUES ${updates.map(() => row).join(", ")}
     ON CONFLICT (tenant_id, run_id, step_id) DO UPDATE SET ${["status", ...given].map(assignment).join(", ")}`,
  ).run(
    ...updates.flatMap((update) => [
      run.tenantId,
      run.runId,
      run.threadId,
      update.stepId,
      update.status,
      value(update, "ordinal"),
      run.tenantId,
      run.runId,
      ...rest.map(([field]) => value(update, field)),
    ]),
  );
}

/** Upserts the rows of `input.steps` of the tenant's run in one transaction; nothing for an unknown run. */
export async function saveSteps(context: SqlContext, input: SaveStepsInput): Promise<void> {
  await context.transaction(async (tx) => {
    const run = await tx.run(input.tenantId, input.runId);
    if (run) await writeSteps(tx, run, input.steps);
  });
}

/** Upserts `steps` of `run` (as read, locked, in the caller's transaction), as that run takes them. */
export async function writeSteps(tx: SqlContext, run: RunRecord, steps: readonly StepUpdate[]): Promise<void> {
  for (const batch of batchesOf(steps.map((update) => asOfRun(update, run)))) await upsertSteps(tx, run, batch);
}

/** A step's own work, made durable in the caller's transaction by the checkpoint that records it. */
export interface StepWork {
  checkpointId: string;
  messageId?: string;
  result?: string;
  /** The run ends with this step (its last publication): the step ends `completed` then, unless it ended already. */
  endedAt?: number;
}

/**
 * Records `work` on step `stepId` of `run`, in the caller's transaction: one upsert, the row made
 * `in_progress` if the step journal has not written it yet (or `completed` when the run ends with it).
 */
export async function recordStepWork(tx: SqlContext, run: RunRecord, stepId: string, work: StepWork): Promise<RunStepRecord> {
  const columns = ["checkpoint_id", ...(work.messageId === undefined ? [] : ["message_id"]), ...(work.result === undefined ? [] : ["result"])];
  const ends = work.endedAt !== undefined;
  const assignments = [
    ...columns.map((column) => `${column} = excluded.${column}`),
    ...(ends ? ["status", "ended_at"].map(assignment) : []),
  ];
  const row = await tx.sql(
    `INSERT INTO run_steps (tenant_id, run_id, thread_id, step_id, status, ordinal, depends_on, ended_at, checkpoint_id, message_id, result)
     VALUES (?, ?, ?, ?, ?, ${NEXT_ORDINAL}, '[]', ?, ?, ?, ?)
     ON CONFLICT (tenant_id, run_id, step_id) DO UPDATE SET ${assignments.join(", ")}
     RETURNING *`,
  ).get(
    run.tenantId,
    run.runId,
    run.threadId,
    stepId,
    ends ? "completed" : "in_progress",
    run.tenantId,
    run.runId,
    work.endedAt ?? null,
    work.checkpointId,
    work.messageId ?? null,
    work.result ?? null,
  );
  return toStep(row!);
}

/**
 * Closes every step of `run` that has not ended, as its end `to` does (see stepStatusAtRunEnd), in
 * the caller's transaction: one statement (two for a completed run), whatever the number of steps.
 * A completed run's steps whose own work was checkpointed complete.
 */
export async function endUnfinishedSteps(tx: SqlContext, run: RunRecord, to: TerminalRunStatus, now: number): Promise<void> {
  const unfinished = UNFINISHED_STEP_STATUSES;
  if (to === "completed") {
    // The run completes with its last publication, possibly before the step journal wrote that the
    // steps whose own work is checkpointed (that one, and the parents it ended) completed.
    await tx.sql(
      `UPDATE run_steps SET status = 'completed', ended_at = ?
       WHERE tenant_id = ? AND run_id = ? AND checkpoint_id IS NOT NULL AND status IN (${unfinished.map(() => "?").join(", ")})`,
    ).run(now, run.tenantId, run.runId, ...unfinished);
  }
  await tx.sql(
    `UPDATE run_steps SET status = CASE status ${unfinished.map(() => "WHEN ? THEN ?").join(" ")} END, ended_at = ?
     WHERE tenant_id = ? AND run_id = ? AND status IN (${unfinished.map(() => "?").join(", ")})`,
  ).run(...unfinished.flatMap((status) => [status, stepStatusAtRunEnd(status, to)]), now, run.tenantId, run.runId, ...unfinished);
}

/** Records a step's result with its `step_completed` checkpoint, fenced like a publication. */
export async function completeStep(context: SqlContext, input: CompleteStepInput): Promise<CompleteStepResult> {
  return context.transaction(async (tx): Promise<CompleteStepResult> => {
    // The run and its thread in one read (both locked), as a publication reads them.
    const read = await tx.runWithThread(input.tenantId, input.runId);
    if (!read) return { kind: "rejected", run: undefined };
    const { run, thread } = read;
    // An accepted cancel, a terminal status or another attempt wins over a late completion.
    if (!canPublish(run, input.attempt) || thread.status !== "active") return { kind: "rejected", run };
    const advanced = await tx.advanceThread(
      thread,
      { checkpointId: input.checkpointId, kind: "step_completed", runId: run.runId, completedStepId: input.stepId, createdAt: input.now },
      input.stats ? { stats: input.stats } : {},
    );
    await tx.updateRun(run, {
      state_version: advanced.thread.stateVersion,
      ...(input.stats ? { stats: JSON.stringify(addStats(run.stats, input.stats)) } : {}),
    });
    const step = await recordStepWork(tx, run, input.stepId, { checkpointId: input.checkpointId, result: input.result });
    return { kind: "completed", checkpoint: advanced.checkpoint, thread: advanced.thread, step };
  });
}

/** The tenant's run's steps in registration order; none for another tenant's run. */
export async function listRunSteps(context: SqlContext, tenantId: string, runId: string): Promise<RunStepRecord[]> {
  const rows = await context.sql("SELECT * FROM run_steps WHERE tenant_id = ? AND run_id = ? ORDER BY ordinal, step_id").all(tenantId, runId);
  return rows.map(toStep);
}
