/** The SQLite adapter's shared state: its connection, its statement cache and the row helpers every concern uses. */
import type Database from "better-sqlite3";
import {
  addStats,
  canTransition,
  type CheckpointRecord,
  type MessageRecord,
  type OperationPhase,
  type OperationRecord,
  type RunRecord,
  type RunStatus,
  type ThreadRecord,
  type UsageStats,
} from "../../core/index.js";
import { toMessage, toOperation, toRun, toThread, type Row } from "../rows.js";

/** A checkpoint's decision: its id, kind and time, and only the fields it names (the rest are null). */
export type CheckpointDecision = Pick<CheckpointRecord, "checkpointId" | "kind" | "createdAt"> &
  Partial<Pick<CheckpointRecord, "runId" | "messageId" | "completedStepId" | "pendingStep" | "resumePolicy" | "cancelledGeneration">>;

/** One connection's context, handed to each concern's functions; internal to the adapter. */
export class SqliteContext {
  readonly db: Database.Database;
  readonly #statements = new Map<string, Database.Statement>();

  constructor(db: Database.Database) {
    this.db = db;
  }

  /** A prepared statement, cached by its text; a function value, so the lineage readers can take it. */
  readonly sql = (text: string): Database.Statement => {
    let statement = this.#statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  };

  /** The thread row, whatever its status. */
  thread(tenantId: string, threadId: string): ThreadRecord | undefined {
    const row = this.sql("SELECT * FROM threads WHERE tenant_id = ? AND thread_id = ?").get(tenantId, threadId) as
      | Row
      | undefined;
    return row ? toThread(row) : undefined;
  }

  /** The run row, if any. */
  run(tenantId: string, runId: string): RunRecord | undefined {
    const row = this.sql("SELECT * FROM runs WHERE tenant_id = ? AND run_id = ?").get(tenantId, runId) as Row | undefined;
    return row ? toRun(row) : undefined;
  }

  /** The message row, if any. */
  message(tenantId: string, messageId: string): MessageRecord | undefined {
    const row = this.sql("SELECT * FROM messages WHERE tenant_id = ? AND message_id = ?").get(tenantId, messageId) as
      | Row
      | undefined;
    return row ? toMessage(row) : undefined;
  }

  /** Inserts one checkpoint row. */
  insertCheckpoint(checkpoint: CheckpointRecord): void {
    this.sql(
      `INSERT INTO checkpoints (tenant_id, checkpoint_id, thread_id, parent_checkpoint_id, state_version, kind, run_id,
         message_id, completed_step_id, pending_step, resume_policy, cancelled_generation, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      checkpoint.tenantId,
      checkpoint.checkpointId,
      checkpoint.threadId,
      checkpoint.parentCheckpointId,
      checkpoint.stateVersion,
      checkpoint.kind,
      checkpoint.runId,
      checkpoint.messageId,
      checkpoint.completedStepId,
      checkpoint.pendingStep ? JSON.stringify(checkpoint.pendingStep) : null,
      checkpoint.resumePolicy,
      checkpoint.cancelledGeneration ? JSON.stringify(checkpoint.cancelledGeneration) : null,
      checkpoint.createdAt,
    );
  }

  /** Inserts one message row. */
  insertMessage(message: MessageRecord): void {
    this.sql(
      `INSERT INTO messages (tenant_id, message_id, thread_id, position, role, content, run_id, state_version,
         checkpoint_id, publication_status, tool_calls, tool_call_id, tool_name, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      message.tenantId,
      message.messageId,
      message.threadId,
      message.position,
      message.role,
      message.content,
      message.runId,
      message.stateVersion,
      message.checkpointId,
      message.publicationStatus,
      message.toolCalls ? JSON.stringify(message.toolCalls) : null,
      message.toolCallId,
      message.toolName,
      message.createdAt,
    );
  }

  /**
   * Advances the thread by one version with compare-and-set on the version it was read at,
   * appending `checkpoint` as the new head. Returns the updated thread.
   */
  advanceThread(
    thread: ThreadRecord,
    checkpoint: CheckpointDecision,
    changes: { stats?: Partial<UsageStats>; activeRunId?: string | null; positions?: number },
  ): { thread: ThreadRecord; checkpoint: CheckpointRecord } {
    const stateVersion = thread.stateVersion + 1;
    const full: CheckpointRecord = {
      runId: null,
      messageId: null,
      completedStepId: null,
      pendingStep: null,
      resumePolicy: null,
      cancelledGeneration: null,
      ...checkpoint,
      tenantId: thread.tenantId,
      threadId: thread.threadId,
      parentCheckpointId: thread.headCheckpointId,
      stateVersion,
    };
    this.insertCheckpoint(full);
    const stats = changes.stats ? addStats(thread.stats, changes.stats) : thread.stats;
    const activeRunId = changes.activeRunId === undefined ? thread.activeRunId : changes.activeRunId;
    const result = this.sql(
      `UPDATE threads SET state_version = ?, head_checkpoint_id = ?, stats = ?, active_run_id = ?,
         next_position = next_position + ?, updated_at = ?
       WHERE tenant_id = ? AND thread_id = ? AND state_version = ?`,
    ).run(
      stateVersion,
      full.checkpointId,
      JSON.stringify(stats),
      activeRunId,
      changes.positions ?? 0,
      full.createdAt,
      thread.tenantId,
      thread.threadId,
      thread.stateVersion,
    );
    if (result.changes !== 1) throw new Error(`state_version compare-and-set failed for ${thread.threadId}`);
    return {
      thread: { ...thread, stateVersion, headCheckpointId: full.checkpointId, stats, activeRunId, updatedAt: full.createdAt },
      checkpoint: full,
    };
  }

  /** The position the thread's next message takes. */
  nextPosition(thread: ThreadRecord): number {
    const row = this.sql("SELECT next_position FROM threads WHERE tenant_id = ? AND thread_id = ?").get(
      thread.tenantId,
      thread.threadId,
    ) as { next_position: number };
    return row.next_position;
  }

  /** Moves a run to `to`, recording the transition; the machine of DESIGN §3 is enforced here. */
  setRunStatus(run: RunRecord, to: RunStatus, now: number, columns: Record<string, unknown> = {}): RunRecord {
    if (!canTransition(run.status, to)) throw new Error(`illegal run transition ${run.status} → ${to}`);
    const names = Object.keys(columns);
    const assignments = names.map((name) => `, ${name} = ?`).join("");
    const result = this.sql(
      `UPDATE runs SET status = ?, transition_count = transition_count + 1${assignments}
       WHERE tenant_id = ? AND run_id = ? AND status = ?`,
    ).run(to, ...names.map((name) => columns[name]), run.tenantId, run.runId, run.status);
    if (result.changes !== 1) throw new Error(`run status compare-and-set failed for ${run.runId}`);
    const { ordinal } = this.sql(
      "SELECT transition_count AS ordinal FROM runs WHERE tenant_id = ? AND run_id = ?",
    ).get(run.tenantId, run.runId) as { ordinal: number };
    this.sql(
      "INSERT INTO run_transitions (tenant_id, run_id, ordinal, from_status, to_status, at) VALUES (?, ?, ?, ?, ?, ?)",
    ).run(run.tenantId, run.runId, ordinal, run.status, to, now);
    return this.run(run.tenantId, run.runId)!;
  }

  /** Sets run columns without a status change; returns the run as stored. */
  updateRun(run: RunRecord, columns: Record<string, unknown>): RunRecord {
    const names = Object.keys(columns);
    this.sql(`UPDATE runs SET ${names.map((name) => `${name} = ?`).join(", ")} WHERE tenant_id = ? AND run_id = ?`).run(
      ...names.map((name) => columns[name]),
      run.tenantId,
      run.runId,
    );
    return this.run(run.tenantId, run.runId)!;
  }

  /** The thread's operations, oldest first; only those in `phase` when given. */
  operationsOfThread(tenantId: string, threadId: string, phase?: OperationPhase): OperationRecord[] {
    const rows = (
      phase === undefined
        ? this.sql("SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at, op_id").all(
            tenantId,
            threadId,
          )
        : this.sql(
            "SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ? AND phase = ? ORDER BY created_at, op_id",
          ).all(tenantId, threadId, phase)
    ) as Row[];
    return rows.map(toOperation);
  }
}
