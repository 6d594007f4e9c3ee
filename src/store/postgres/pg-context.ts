/**
 * The PostgreSQL adapter's shared state: a pool, a statement shim with the SQLite adapter's shape
 * (`sql(text).get/all/run`, `?` placeholders), transactions, and the row helpers every concern uses.
 *
 * Isolation: a write transaction runs at READ COMMITTED and locks the rows it decides on as it
 * reads them (`thread()` and `run()` read `FOR UPDATE`). Every change of a thread's state goes
 * through its row, so the writers of one thread take turns and each sees what the previous one
 * committed, while writers of different threads never wait on each other. (SERIALIZABLE was
 * correct too, but its predicate locks on small tables made unrelated threads conflict, and
 * concurrent run creation retried until it gave up.) Uniqueness (idempotency keys, positions,
 * versions) is kept by unique indexes.
 */
import type pg from "pg";
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

/** One statement, run on the context's connection. */
export interface PgStatement {
  get(...values: unknown[]): Promise<Row | undefined>;
  all(...values: unknown[]): Promise<Row[]>;
  run(...values: unknown[]): Promise<{ changes: number }>;
}

/** How a transaction isolates itself. */
export interface TransactionOptions {
  /** A consistent snapshot for reads only: locks nothing, never retries. */
  readOnly?: boolean;
  /**
   * Unique constraints whose violation means a concurrent writer of the same row committed
   * first: the transaction runs again and finds that row (as the serial SQLite adapter would).
   */
  rerunOnConflictWith?: readonly string[];
}

/** Serialization failure and deadlock (two writers locking rows in opposite orders): run again. */
const RETRYABLE = new Set(["40001", "40P01"]);
const MAX_ATTEMPTS = 50;

/** Statement texts → names, so each connection parses a statement once (`?` → `$n` done once too). */
const preparedNames = new Map<string, { name: string; text: string }>();

function prepared(text: string): { name: string; text: string } {
  let entry = preparedNames.get(text);
  if (!entry) {
    let index = 0;
    let isQuoted = false;
    let converted = "";
    for (const char of text) {
      if (char === "'") isQuoted = !isQuoted;
      converted += char === "?" && !isQuoted ? `$${++index}` : char;
    }
    entry = { name: `tm${preparedNames.size}`, text: converted };
    preparedNames.set(text, entry);
  }
  return entry;
}

/**
 * One connection's context (the pool outside a transaction, a client inside one), handed to each
 * concern's functions; internal to the adapter.
 */
export class PgContext {
  readonly pool: pg.Pool;
  readonly #client: pg.PoolClient | undefined;
  /** In a write transaction: rows read through `thread()` and `run()` are locked until it ends. */
  readonly #isLocking: boolean;

  constructor(pool: pg.Pool, client?: pg.PoolClient, isLocking = false) {
    this.pool = pool;
    this.#client = client;
    this.#isLocking = isLocking;
  }

  get isInTransaction(): boolean {
    return this.#client !== undefined;
  }

  /** A statement on this context's connection; a function value, so the lineage readers can take it. */
  readonly sql = (text: string): PgStatement => {
    const query = (values: unknown[]) => {
      const { name, text: converted } = prepared(text);
      const config = { name, text: converted, values };
      return this.#client ? this.#client.query(config) : this.pool.query(config);
    };
    return {
      get: async (...values) => (await query(values)).rows[0] as Row | undefined,
      all: async (...values) => (await query(values)).rows as Row[],
      run: async (...values) => ({ changes: (await query(values)).rowCount ?? 0 }),
    };
  };

  /**
   * Runs `fn` in one transaction (a locking write transaction, or a read-only snapshot), again
   * from the start when it lost a deadlock. Inside a transaction, `fn` joins it.
   */
  async transaction<T>(fn: (tx: PgContext) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    if (this.#client) return fn(this);
    const begin = options.readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN ISOLATION LEVEL READ COMMITTED";
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      let isBroken = false;
      try {
        await client.query(begin);
        const result = await fn(new PgContext(this.pool, client, !options.readOnly));
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {
          isBroken = true;
        });
        const code = (error as { code?: unknown }).code;
        const constraint = (error as { constraint?: unknown }).constraint;
        const isLostInsert = code === "23505" && typeof constraint === "string" && options.rerunOnConflictWith?.includes(constraint) === true;
        if (typeof code !== "string" || !(RETRYABLE.has(code) || isLostInsert) || attempt >= MAX_ATTEMPTS) throw error;
      } finally {
        client.release(isBroken);
      }
      // A short random pause spreads the writers that collided.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
    }
  }

  /** The thread row, whatever its status (locked in a write transaction). */
  async thread(tenantId: string, threadId: string): Promise<ThreadRecord | undefined> {
    const lock = this.#isLocking ? " FOR UPDATE" : "";
    const row = await this.sql(`SELECT * FROM threads WHERE tenant_id = ? AND thread_id = ?${lock}`).get(tenantId, threadId);
    return row ? toThread(row) : undefined;
  }

  /** The run row, if any (locked in a write transaction). */
  async run(tenantId: string, runId: string): Promise<RunRecord | undefined> {
    const lock = this.#isLocking ? " FOR UPDATE" : "";
    const row = await this.sql(`SELECT * FROM runs WHERE tenant_id = ? AND run_id = ?${lock}`).get(tenantId, runId);
    return row ? toRun(row) : undefined;
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
  async advanceThread(
    thread: ThreadRecord,
    checkpoint: CheckpointDecision,
    changes: { stats?: Partial<UsageStats>; activeRunId?: string | null; positions?: number },
  ): Promise<{ thread: ThreadRecord; checkpoint: CheckpointRecord }> {
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
    if (result.changes !== 1) throw new Error(`state_version compare-and-set failed for ${thread.threadId}`);
    await this.insertCheckpoint(full);
    return {
      thread: { ...thread, stateVersion, headCheckpointId: full.checkpointId, stats, activeRunId, updatedAt: full.createdAt },
      checkpoint: full,
    };
  }

  /** The position the thread's next message takes. */
  async nextPosition(thread: ThreadRecord): Promise<number> {
    const row = await this.sql("SELECT next_position FROM threads WHERE tenant_id = ? AND thread_id = ?").get(
      thread.tenantId,
      thread.threadId,
    );
    return Number(row!.next_position);
  }

  /** Moves a run to `to`, recording the transition; the machine of DESIGN §3 is enforced here. */
  async setRunStatus(run: RunRecord, to: RunStatus, now: number, columns: Record<string, unknown> = {}): Promise<RunRecord> {
    if (!canTransition(run.status, to)) throw new Error(`illegal run transition ${run.status} → ${to}`);
    const names = Object.keys(columns);
    const assignments = names.map((name) => `, ${name} = ?`).join("");
    const row = await this.sql(
      `UPDATE runs SET status = ?, transition_count = transition_count + 1${assignments}
       WHERE tenant_id = ? AND run_id = ? AND status = ?
       RETURNING *`,
    ).get(to, ...names.map((name) => columns[name]), run.tenantId, run.runId, run.status);
    if (!row) throw new Error(`run status compare-and-set failed for ${run.runId}`);
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
    const rows =
      phase === undefined
        ? await this.sql("SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at, op_id").all(
            tenantId,
            threadId,
          )
        : await this.sql(
            "SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ? AND phase = ? ORDER BY created_at, op_id",
          ).all(tenantId, threadId, phase);
    return rows.map(toOperation);
  }
}
