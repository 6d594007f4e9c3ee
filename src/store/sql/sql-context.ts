/**
 * The SQL store's shared state, handed to each concern's functions: statements on the current
 * connection, transactions, and the row helpers every concern uses. Internal to the store.
 *
 * Isolation: a write transaction locks the rows it decides on as it reads them (`thread()` and
 * `run()` read with the dialect's `forUpdate`). Every change of a thread's state goes through its
 * row, so the writers of one thread take turns and each sees what the previous one committed,
 * while (on PostgreSQL) writers of different threads never wait on each other. SQLite has one
 * writer at a time, so there the lock is the write transaction itself.
 */
import {
  addStats,
  canTransition,
  type CheckpointRecord,
  InvariantError,
  type MessageRecord,
  OPERATION_PHASES,
  type OperationPhase,
  type OperationRecord,
  type RunRecord,
  type RunStatus,
  type ThreadRecord,
  type UsageStats,
} from "../../core/index.js";
import { toMessage, toOperation, toRun, toThread, type Row } from "../rows.js";
import { StoreInvariantError } from "../store-invariant-error.js";
import type { SqlConnection, SqlDialect, SqlDriver, TransactionOptions } from "./sql-driver.js";

/** A checkpoint's decision: its id, kind and time, and only the fields it names (the rest are null). */
export type CheckpointDecision = Pick<CheckpointRecord, "checkpointId" | "kind" | "createdAt"> &
  Partial<Pick<CheckpointRecord, "runId" | "messageId" | "completedStepId" | "pendingStep" | "resumePolicy" | "cancelledGeneration">>;

/** What a checkpoint's decision leaves null unless it names it: the one list of those fields. */
export const UNDECIDED_CHECKPOINT_FIELDS = {
  runId: null,
  messageId: null,
  completedStepId: null,
  pendingStep: null,
  resumePolicy: null,
  cancelledGeneration: null,
} as const;

/** One statement, run on the context's connection. */
export interface SqlStatement {
  get(...values: unknown[]): Promise<Row | undefined>;
  all(...values: unknown[]): Promise<Row[]>;
  run(...values: unknown[]): Promise<{ changes: number }>;
}

/** A run read with its thread in one statement (both rows locked in a write transaction). */
export interface RunWithThread {
  run: RunRecord;
  thread: ThreadRecord;
  /** The position the thread's next message takes. */
  nextPosition: number;
}

/** The thread's columns, prefixed where they are read beside a run's. */
const THREAD_COLUMNS = [
  "tenant_id",
  "thread_id",
  "status",
  "state_version",
  "head_checkpoint_id",
  "active_run_id",
  "title",
  "metadata",
  "next_position",
  "stats",
  "created_at",
  "updated_at",
  "parent_thread_id",
  "fork_checkpoint_id",
  "fork_state_version",
  "base_position",
] as const;
const RUN_WITH_THREAD = `SELECT r.*, ${THREAD_COLUMNS.map((column) => `t.${column} AS thread__${column}`).join(", ")}
  FROM runs r JOIN threads t ON t.tenant_id = r.tenant_id AND t.thread_id = r.thread_id
  WHERE r.tenant_id = ? AND r.run_id = ?`;

/** One connection's context: the driver's own outside a transaction, the transaction's inside one. */
export class SqlContext {
  readonly driver: SqlDriver;
  readonly #connection: SqlConnection;
  readonly #isInTransaction: boolean;
  /** In a write transaction: rows read through `thread()` and `run()` are locked until it ends. */
  readonly #isLocking: boolean;

  constructor(driver: SqlDriver, connection: SqlConnection = driver.connection, transaction?: { isLocking: boolean }) {
    this.driver = driver;
    this.#connection = connection;
    this.#isInTransaction = transaction !== undefined;
    this.#isLocking = transaction?.isLocking ?? false;
  }

  get dialect(): SqlDialect {
    return this.driver.dialect;
  }

  /** The dialect's row lock, inside a write transaction; nothing elsewhere. */
  get forUpdate(): string {
    return this.#isLocking ? this.driver.dialect.forUpdate : "";
  }

  /** A statement on this context's connection; a function value, so the lineage readers can take it. */
  readonly sql = (text: string): SqlStatement => {
    const connection = this.#connection;
    return {
      get: (...values) => connection.get(text, values),
      all: (...values) => connection.all(text, values),
      run: (...values) => connection.run(text, values),
    };
  };

  /** Runs `fn` in one transaction (a locking write one, or a read-only snapshot); inside one, `fn` joins it. */
  async transaction<T>(fn: (tx: SqlContext) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    if (this.#isInTransaction) return fn(this);
    return this.driver.transaction(
      (connection) => fn(new SqlContext(this.driver, connection, { isLocking: !options.readOnly })),
      options,
    );
  }

  /** The thread row, whatever its status (locked in a write transaction). */
  async thread(tenantId: string, threadId: string): Promise<ThreadRecord | undefined> {
    return (await this.threadWithPosition(tenantId, threadId))?.thread;
  }

  /** The thread row and the position its next message takes, whatever its status (locked in a write transaction). */
  async threadWithPosition(tenantId: string, threadId: string): Promise<{ thread: ThreadRecord; nextPosition: number } | undefined> {
    const row = await this.sql(`SELECT * FROM threads WHERE tenant_id = ? AND thread_id = ?${this.forUpdate}`).get(tenantId, threadId);
    return row ? { thread: toThread(row), nextPosition: Number(row.next_position) } : undefined;
  }

  /** The run row, if any (locked in a write transaction). */
  async run(tenantId: string, runId: string): Promise<RunRecord | undefined> {
    const row = await this.sql(`SELECT * FROM runs WHERE tenant_id = ? AND run_id = ?${this.forUpdate}`).get(tenantId, runId);
    return row ? toRun(row) : undefined;
  }

  /**
   * The run and its thread in one statement, one round trip instead of two (both locked in a write
   * transaction, in the one statement); undefined when the run is unknown.
   */
  async runWithThread(tenantId: string, runId: string): Promise<RunWithThread | undefined> {
    const row = await this.sql(`${RUN_WITH_THREAD}${this.forUpdate}`).get(tenantId, runId);
    if (!row) return undefined;
    const threadRow = Object.fromEntries(THREAD_COLUMNS.map((column) => [column, row[`thread__${column}`]]));
    return { run: toRun(row), thread: toThread(threadRow), nextPosition: Number(threadRow.next_position) };
  }

  /** The message row, if any. */
  async message(tenantId: string, messageId: string): Promise<MessageRecord | undefined> {
    const row = await this.sql("SELECT * FROM messages WHERE tenant_id = ? AND message_id = ?").get(tenantId, messageId);
    return row ? toMessage(row) : undefined;
  }

  /** Inserts one checkpoint row. */
  async insertCheckpoint(checkpoint: CheckpointRecord): Promise<void> {
    await this.sql(
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
  async insertMessage(message: MessageRecord): Promise<void> {
    await this.sql(
      `INSERT INTO messages (tenant_id, message_id, thread_id, position, role, content, run_id, state_version,
         checkpoint_id, publication_status, tool_calls, tool_call_id, tool_name, label, interrupted, format, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
      message.label,
      message.interrupted ? 1 : 0,
      message.format,
      message.createdAt,
    );
  }

  /**
   * Advances the thread by one version with compare-and-set on the version it was read at,
   * appending `checkpoint` as the new head. Returns the updated thread.
   */
  async advanceThread(
    thread: ThreadRecord,
    checkpoint: CheckpointDecision,
    changes: { stats?: Partial<UsageStats>; activeRunId?: string | null; positions?: number },
  ): Promise<{ thread: ThreadRecord; checkpoint: CheckpointRecord }> {
    const stateVersion = thread.stateVersion + 1;
    const full: CheckpointRecord = {
      ...UNDECIDED_CHECKPOINT_FIELDS,
      ...checkpoint,
      tenantId: thread.tenantId,
      threadId: thread.threadId,
      parentCheckpointId: thread.headCheckpointId,
      stateVersion,
    };
    // The version compare-and-set on the (locked) thread row, then its checkpoint.
    const stats = changes.stats ? addStats(thread.stats, changes.stats) : thread.stats;
    const activeRunId = changes.activeRunId === undefined ? thread.activeRunId : changes.activeRunId;
    const result = await this.sql(
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
    if (result.changes !== 1) throw new StoreInvariantError("compare_and_set_failed", thread.threadId, `state_version compare-and-set failed for ${thread.threadId}`);
    await this.insertCheckpoint(full);
    return {
      thread: { ...thread, stateVersion, headCheckpointId: full.checkpointId, stats, activeRunId, updatedAt: full.createdAt },
      checkpoint: full,
    };
  }

  /** Moves a run to `to`, recording the transition; the machine of DESIGN §3 is enforced here. */
  async setRunStatus(run: RunRecord, to: RunStatus, now: number, columns: Record<string, unknown> = {}): Promise<RunRecord> {
    if (!canTransition(run.status, to)) throw new StoreInvariantError("illegal_transition", run.runId, `illegal run transition ${run.status} → ${to}`);
    const names = Object.keys(columns);
    const assignments = names.map((name) => `, ${name} = ?`).join("");
    const row = await this.sql(
      `UPDATE runs SET status = ?, transition_count = transition_count + 1${assignments}
       WHERE tenant_id = ? AND run_id = ? AND status = ?
       RETURNING *`,
    ).get(to, ...names.map((name) => columns[name]), run.tenantId, run.runId, run.status);
    if (!row) throw new StoreInvariantError("compare_and_set_failed", run.runId, `run status compare-and-set failed for ${run.runId}`);
    const updated = toRun(row);
    await this.sql(
      "INSERT INTO run_transitions (tenant_id, run_id, ordinal, from_status, to_status, at) VALUES (?, ?, ?, ?, ?, ?)",
    ).run(run.tenantId, run.runId, Number(row.transition_count), run.status, to, now);
    return updated;
  }

  /** Sets run columns without a status change; returns the run as stored. */
  async updateRun(run: RunRecord, columns: Record<string, unknown>): Promise<RunRecord> {
    const names = Object.keys(columns);
    const row = await this.sql(
      `UPDATE runs SET ${names.map((name) => `${name} = ?`).join(", ")} WHERE tenant_id = ? AND run_id = ? RETURNING *`,
    ).get(...names.map((name) => columns[name]), run.tenantId, run.runId);
    return toRun(row!);
  }

  /** The thread's operations, oldest first; only those in `phase` when given. */
  async operationsOfThread(tenantId: string, threadId: string, phase?: OperationPhase): Promise<OperationRecord[]> {
    // The phase is written into the text, not bound: SQLite prepares a statement again at every
    // bind when a bound value meets a column that a partial index tests (operations_committing),
    // 14 µs against 3 µs a read. Only a phase's own name reaches the text.
    if (phase !== undefined && !OPERATION_PHASES.includes(phase)) throw new InvariantError(`unknown operation phase ${JSON.stringify(phase)}`);
    const inPhase = phase === undefined ? "" : ` AND phase = '${phase}'`;
    const rows = await this.sql(`SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ?${inPhase} ORDER BY created_at, op_id`).all(
      tenantId,
      threadId,
    );
    return rows.map(toOperation);
  }
}
