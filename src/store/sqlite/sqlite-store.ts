import Database from "better-sqlite3";
import {
  addStats,
  canTransition,
  emptyStats,
  isCancellable,
  isTerminalStatus,
  type CheckpointRecord,
  type MessageRecord,
  type OperationPhase,
  type OperationRecord,
  type RunRecord,
  type RunStatus,
  type ThreadRecord,
  type TraceRecord,
  type UsageStats,
} from "../../core/index.js";
import type {
  BeginCommitResult,
  ClaimRunInput,
  ConfirmOperationInput,
  CreateRunInput,
  CreateRunResult,
  CreateThreadInput,
  DeleteMessageInput,
  DeleteMessageResult,
  FinishOperationInput,
  FinishRunInput,
  ForkThreadInput,
  ForkThreadResult,
  ListCheckpointsOptions,
  ListMessagesOptions,
  PrepareOperationInput,
  PrepareOperationResult,
  PublishMessageInput,
  PublishMessageResult,
  RequestCancelInput,
  RequestCancelResult,
  SaveFragmentInput,
  SaveFragmentResult,
  Store,
  ThreadSnapshot,
  TransitionRunInput,
} from "../store.js";
import { migrate } from "./migrations.js";
import { startWalCheckpointer, type WalCheckpointer } from "./wal-checkpointer.js";
import { toCheckpoint, toMessage, toOperation, toRun, toThread, toTrace, toTransition, type Row } from "./rows.js";
import {
  prefixLength,
  readLineage,
  readLineageCheckpoints,
  readLineageMessages,
  readLineageOperations,
  messageInLineage,
  type LineageLevel,
} from "./lineage.js";

/** JSON text for a column, or NULL for a value that is absent. */
const jsonColumn = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));

/** Options for {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /** A file path, or `:memory:`. */
  path: string;
  /**
   * How often a worker thread checkpoints the WAL (default 1000 ms), so no commit on the main
   * thread pays for it; 0 leaves SQLite's automatic checkpoints on. Files only.
   */
  checkpointIntervalMs?: number;
  /** Where checkpoint failures are reported (default: ignored; the next one retries). */
  onBackgroundError?: (message: string) => void;
}

/**
 * The embedded store: one SQLite file in WAL mode. better-sqlite3 is synchronous, so each
 * method's transaction runs without interleaving; the async signatures keep the contract
 * shared with networked adapters.
 */
export function createSqliteStore(options: SqliteStoreOptions): Store {
  const db = new Database(options.path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  migrate(db);
  const intervalMs = options.checkpointIntervalMs ?? 1_000;
  const isFile = options.path !== ":memory:" && !options.path.startsWith("file::memory:") && options.path !== "";
  if (!isFile || intervalMs <= 0) return new SqliteStore(db, undefined);
  db.pragma("wal_autocheckpoint = 0");
  return new SqliteStore(db, startWalCheckpointer(options.path, intervalMs, options.onBackgroundError ?? (() => {})));
}

class SqliteStore implements Store {
  readonly #db: Database.Database;
  readonly #statements = new Map<string, Database.Statement>();
  readonly #checkpointer: WalCheckpointer | undefined;
  /** `#sql` as a function value, for the lineage readers. */
  readonly #statement = (text: string): Database.Statement => this.#sql(text);

  constructor(db: Database.Database, checkpointer: WalCheckpointer | undefined) {
    this.#db = db;
    this.#checkpointer = checkpointer;
  }

  /** A prepared statement, cached by its text. */
  #sql(text: string): Database.Statement {
    let statement = this.#statements.get(text);
    if (!statement) {
      statement = this.#db.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  }

  #thread(tenantId: string, threadId: string): ThreadRecord | undefined {
    const row = this.#sql("SELECT * FROM threads WHERE tenant_id = ? AND thread_id = ?").get(tenantId, threadId) as
      | Row
      | undefined;
    return row ? toThread(row) : undefined;
  }

  #run(tenantId: string, runId: string): RunRecord | undefined {
    const row = this.#sql("SELECT * FROM runs WHERE tenant_id = ? AND run_id = ?").get(tenantId, runId) as Row | undefined;
    return row ? toRun(row) : undefined;
  }

  #insertCheckpoint(checkpoint: CheckpointRecord): void {
    this.#sql(
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

  #insertMessage(message: MessageRecord): void {
    this.#sql(
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
  #advanceThread(
    thread: ThreadRecord,
    checkpoint: Omit<CheckpointRecord, "stateVersion" | "parentCheckpointId" | "tenantId" | "threadId">,
    changes: { stats?: Partial<UsageStats>; activeRunId?: string | null; positions?: number },
  ): { thread: ThreadRecord; checkpoint: CheckpointRecord } {
    const stateVersion = thread.stateVersion + 1;
    const full: CheckpointRecord = {
      ...checkpoint,
      tenantId: thread.tenantId,
      threadId: thread.threadId,
      parentCheckpointId: thread.headCheckpointId,
      stateVersion,
    };
    this.#insertCheckpoint(full);
    const stats = changes.stats ? addStats(thread.stats, changes.stats) : thread.stats;
    const activeRunId = changes.activeRunId === undefined ? thread.activeRunId : changes.activeRunId;
    const result = this.#sql(
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

  #nextPosition(thread: ThreadRecord): number {
    const row = this.#sql("SELECT next_position FROM threads WHERE tenant_id = ? AND thread_id = ?").get(
      thread.tenantId,
      thread.threadId,
    ) as { next_position: number };
    return row.next_position;
  }

  /** Moves a run to `to`, recording the transition; the machine of DESIGN §3 is enforced here. */
  #setRunStatus(run: RunRecord, to: RunStatus, now: number, columns: Record<string, unknown> = {}): RunRecord {
    if (!canTransition(run.status, to)) throw new Error(`illegal run transition ${run.status} → ${to}`);
    const names = Object.keys(columns);
    const assignments = names.map((name) => `, ${name} = ?`).join("");
    const result = this.#sql(
      `UPDATE runs SET status = ?, transition_count = transition_count + 1${assignments}
       WHERE tenant_id = ? AND run_id = ? AND status = ?`,
    ).run(to, ...names.map((name) => columns[name]), run.tenantId, run.runId, run.status);
    if (result.changes !== 1) throw new Error(`run status compare-and-set failed for ${run.runId}`);
    const { ordinal } = this.#sql(
      "SELECT transition_count AS ordinal FROM runs WHERE tenant_id = ? AND run_id = ?",
    ).get(run.tenantId, run.runId) as { ordinal: number };
    this.#sql(
      "INSERT INTO run_transitions (tenant_id, run_id, ordinal, from_status, to_status, at) VALUES (?, ?, ?, ?, ?, ?)",
    ).run(run.tenantId, run.runId, ordinal, run.status, to, now);
    return this.#run(run.tenantId, run.runId)!;
  }

  async createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    const tx = this.#db.transaction(() => {
      this.#sql(
        `INSERT INTO threads (tenant_id, thread_id, status, state_version, head_checkpoint_id, active_run_id, title,
           metadata, next_position, stats, created_at, updated_at)
         VALUES (?, ?, 'active', 1, ?, NULL, NULL, ?, 0, ?, ?, ?)`,
      ).run(
        input.tenantId,
        input.threadId,
        input.checkpointId,
        JSON.stringify(input.metadata),
        JSON.stringify(emptyStats()),
        input.now,
        input.now,
      );
      this.#insertCheckpoint({
        tenantId: input.tenantId,
        checkpointId: input.checkpointId,
        threadId: input.threadId,
        parentCheckpointId: null,
        stateVersion: 1,
        kind: "thread_created",
        runId: null,
        messageId: null,
        completedStepId: null,
        pendingStep: null,
        resumePolicy: null,
        cancelledGeneration: null,
        createdAt: input.now,
      });
      return this.#thread(input.tenantId, input.threadId)!;
    });
    return tx();
  }

  async getThread(tenantId: string, threadId: string): Promise<ThreadRecord | undefined> {
    const thread = this.#thread(tenantId, threadId);
    return thread?.status === "active" ? thread : undefined;
  }

  async deleteThread(tenantId: string, threadId: string, now: number): Promise<boolean> {
    const result = this.#sql(
      "UPDATE threads SET status = 'deleted', updated_at = ? WHERE tenant_id = ? AND thread_id = ? AND status = 'active'",
    ).run(now, tenantId, threadId);
    return result.changes === 1;
  }

  async saveTitle(tenantId: string, threadId: string, title: string, now: number): Promise<void> {
    this.#sql(
      "UPDATE threads SET title = ?, updated_at = ? WHERE tenant_id = ? AND thread_id = ? AND title IS NULL",
    ).run(title, now, tenantId, threadId);
  }

  async listMessages(tenantId: string, threadId: string, options: ListMessagesOptions = {}): Promise<MessageRecord[]> {
    // One read transaction: a branch's levels and their rows are one consistent view.
    return this.#db.transaction(() => {
      const levels = readLineage(this.#statement, tenantId, threadId);
      return levels ? readLineageMessages(this.#statement, tenantId, levels, options.limit) : [];
    })();
  }

  async listCheckpoints(tenantId: string, threadId: string, options: ListCheckpointsOptions = {}): Promise<CheckpointRecord[]> {
    return this.#db.transaction(() => {
      const levels = readLineage(this.#statement, tenantId, threadId);
      return levels ? readLineageCheckpoints(this.#statement, tenantId, levels, options.fromVersion) : [];
    })();
  }

  async forkThread(input: ForkThreadInput): Promise<ForkThreadResult> {
    const tx = this.#db.transaction((): ForkThreadResult => {
      const source = this.#thread(input.tenantId, input.sourceThreadId);
      if (!source || source.status !== "active") return { kind: "thread_not_found" };
      const row = this.#sql("SELECT * FROM checkpoints WHERE tenant_id = ? AND checkpoint_id = ?").get(
        input.tenantId,
        input.fromCheckpointId,
      ) as Row | undefined;
      const fork = row ? toCheckpoint(row) : undefined;
      const levels = readLineage(this.#statement, input.tenantId, input.sourceThreadId)!;
      const owner = fork ? this.#levelHolding(levels, fork) : undefined;
      if (!fork || !owner) return { kind: "checkpoint_not_found" };
      // The branch hangs off the checkpoint's own thread: its lineage is that thread's, up to the fork version.
      const { base_position: ownerBase } = this.#sql(
        "SELECT base_position FROM threads WHERE tenant_id = ? AND thread_id = ?",
      ).get(input.tenantId, owner.threadId) as { base_position: number };
      const basePosition = prefixLength(this.#statement, input.tenantId, owner.threadId, ownerBase, fork.stateVersion);
      const stateVersion = fork.stateVersion + 1;
      // The fork point is a fact: the client's metadata cannot overwrite it.
      const metadata = {
        ...input.metadata,
        forked_from: { thread_id: input.sourceThreadId, checkpoint_id: fork.checkpointId },
      };
      this.#sql(
        `INSERT INTO threads (tenant_id, thread_id, status, state_version, head_checkpoint_id, active_run_id, title,
           metadata, next_position, stats, created_at, updated_at, parent_thread_id, fork_checkpoint_id,
           fork_state_version, base_position)
         VALUES (?, ?, 'active', ?, ?, NULL, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        input.tenantId,
        input.threadId,
        stateVersion,
        input.checkpointId,
        JSON.stringify(metadata),
        basePosition,
        JSON.stringify(emptyStats()),
        input.now,
        input.now,
        owner.threadId,
        fork.checkpointId,
        fork.stateVersion,
        basePosition,
      );
      const checkpoint: CheckpointRecord = {
        tenantId: input.tenantId,
        checkpointId: input.checkpointId,
        threadId: input.threadId,
        parentCheckpointId: fork.checkpointId,
        stateVersion,
        kind: "fork_created",
        runId: null,
        messageId: null,
        completedStepId: null,
        pendingStep: null,
        resumePolicy: null,
        cancelledGeneration: null,
        createdAt: input.now,
      };
      this.#insertCheckpoint(checkpoint);
      return { kind: "forked", thread: this.#thread(input.tenantId, input.threadId)!, checkpoint };
    });
    return tx.immediate();
  }

  /** The lineage level whose visible checkpoints include `checkpoint`, if any. */
  #levelHolding(levels: readonly LineageLevel[], checkpoint: CheckpointRecord): LineageLevel | undefined {
    return levels.find((level) => level.threadId === checkpoint.threadId && checkpoint.stateVersion <= level.maxVersion);
  }

  async createRun(input: CreateRunInput): Promise<CreateRunResult> {
    const tx = this.#db.transaction((): CreateRunResult => {
      const earlier =
        this.#run(input.tenantId, input.runId) ??
        (input.idempotencyKey ? this.#findByKey(input.tenantId, input.idempotencyKey) : undefined);
      if (earlier) {
        return earlier.requestHash === input.requestHash && earlier.threadId === input.threadId
          ? { kind: "existing", run: earlier }
          : { kind: "key_reused", run: earlier };
      }
      const thread = this.#thread(input.tenantId, input.threadId);
      if (!thread || thread.status !== "active") return { kind: "thread_not_found" };
      // The version check comes first: a stale client learns it is stale even on a busy thread.
      if (input.expectedStateVersion !== null && input.expectedStateVersion !== thread.stateVersion) {
        return { kind: "state_version_conflict", thread };
      }
      // An external action whose outcome nobody knows must be confirmed before anything builds on it (DESIGN §6).
      const unconfirmed = this.#operationsOfThread(input.tenantId, input.threadId, "outcome_unknown");
      if (unconfirmed.length > 0) return { kind: "operation_unconfirmed", thread, operations: unconfirmed };
      if (thread.activeRunId !== null) {
        if (!input.enqueue || input.input === null) return { kind: "run_in_progress", thread };
        // It waits, its input not yet accepted: nothing of the thread changes until it is admitted.
        this.#insertRun(input, thread.headCheckpointId, thread.stateVersion, { messageCount: 0 }, true);
        return { kind: "enqueued", run: this.#run(input.tenantId, input.runId)!, thread };
      }
      if (input.input === null) {
        // Continue from a Stop without a new message: accepting the run is still a transition, and
        // its checkpoint names the step that runs again.
        const head = this.#sql("SELECT * FROM checkpoints WHERE tenant_id = ? AND checkpoint_id = ?").get(
          input.tenantId,
          thread.headCheckpointId,
        ) as Row | undefined;
        const resumed = this.#advanceThread(
          thread,
          {
            checkpointId: input.checkpointId,
            kind: "resume_accepted",
            runId: input.runId,
            messageId: null,
            completedStepId: null,
            pendingStep: head ? toCheckpoint(head).pendingStep : null,
            resumePolicy: "regenerate_pending_step",
            cancelledGeneration: null,
            createdAt: input.now,
          },
          { activeRunId: input.runId },
        );
        this.#insertRun({ ...input, inputMessageId: "" }, thread.headCheckpointId, resumed.thread.stateVersion, {}, false);
        return { kind: "created", run: this.#run(input.tenantId, input.runId)!, thread: resumed.thread, message: null, checkpoint: resumed.checkpoint };
      }
      const { thread: advanced, message, checkpoint } = this.#acceptInput(thread, {
        runId: input.runId,
        messageId: input.inputMessageId,
        checkpointId: input.checkpointId,
        content: input.input.content,
        now: input.now,
      });
      this.#insertRun(input, thread.headCheckpointId, advanced.stateVersion, { messageCount: 1 }, false);
      return { kind: "created", run: this.#run(input.tenantId, input.runId)!, thread: advanced, message, checkpoint };
    });
    return tx();
  }

  /** Publishes a run's input with its `input_accepted` checkpoint and makes the run the active one. */
  #acceptInput(
    thread: ThreadRecord,
    input: { runId: string; messageId: string; checkpointId: string; content: string; now: number },
  ): { thread: ThreadRecord; message: MessageRecord; checkpoint: CheckpointRecord } {
    const position = this.#nextPosition(thread);
    const advanced = this.#advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "input_accepted",
        runId: input.runId,
        messageId: input.messageId,
        completedStepId: null,
        pendingStep: null,
        resumePolicy: null,
        cancelledGeneration: null,
        createdAt: input.now,
      },
      { stats: { messageCount: 1 }, activeRunId: input.runId, positions: 1 },
    );
    const message: MessageRecord = {
      tenantId: thread.tenantId,
      messageId: input.messageId,
      threadId: thread.threadId,
      position,
      role: "user",
      content: input.content,
      runId: input.runId,
      stateVersion: advanced.thread.stateVersion,
      checkpointId: input.checkpointId,
      publicationStatus: "published",
      toolCalls: null,
      toolCallId: null,
      toolName: null,
      createdAt: input.now,
    };
    this.#insertMessage(message);
    return { thread: advanced.thread, message, checkpoint: advanced.checkpoint };
  }

  #insertRun(input: CreateRunInput, baseCheckpointId: string, stateVersion: number, stats: Partial<UsageStats>, isWaiting: boolean): void {
    this.#sql(
      `INSERT INTO runs (tenant_id, run_id, thread_id, status, attempt, base_checkpoint_id, input, input_message_id,
         idempotency_key, request_hash, model, on_disconnect, recovery_policy, state_version, stats,
         transition_count, is_waiting, created_at)
       VALUES (?, ?, ?, 'queued', 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
    ).run(
      input.tenantId,
      input.runId,
      input.threadId,
      baseCheckpointId,
      JSON.stringify(input.input),
      input.inputMessageId,
      input.idempotencyKey,
      input.requestHash,
      input.model,
      input.onDisconnect,
      input.recoveryPolicy,
      stateVersion,
      JSON.stringify(addStats(emptyStats(), stats)),
      isWaiting ? 1 : 0,
      input.now,
    );
    this.#sql(
      "INSERT INTO run_transitions (tenant_id, run_id, ordinal, from_status, to_status, at) VALUES (?, ?, 1, NULL, 'queued', ?)",
    ).run(input.tenantId, input.runId, input.now);
  }

  async admitNextRun(tenantId: string, threadId: string, checkpointId: string, now: number): Promise<RunRecord | undefined> {
    const tx = this.#db.transaction(() => {
      const thread = this.#thread(tenantId, threadId);
      if (!thread || thread.status !== "active" || thread.activeRunId !== null) return undefined;
      const row = this.#sql(
        `SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ? AND is_waiting = 1 AND status = 'queued'
         ORDER BY created_at, run_id LIMIT 1`,
      ).get(tenantId, threadId) as Row | undefined;
      if (!row) return undefined;
      const run = toRun(row);
      if (run.input === null || run.inputMessageId === null) return undefined;
      const { thread: advanced } = this.#acceptInput(thread, {
        runId: run.runId,
        messageId: run.inputMessageId,
        checkpointId,
        content: run.input.content,
        now,
      });
      return this.#updateRun(run, {
        is_waiting: 0,
        base_checkpoint_id: thread.headCheckpointId,
        state_version: advanced.stateVersion,
        stats: JSON.stringify(addStats(run.stats, { messageCount: 1 })),
      });
    }).immediate;
    return tx();
  }

  async listThreadsWithWaitingRuns(): Promise<{ tenantId: string; threadId: string }[]> {
    const rows = this.#sql(
      `SELECT DISTINCT r.tenant_id, r.thread_id FROM runs r
         JOIN threads t ON t.tenant_id = r.tenant_id AND t.thread_id = r.thread_id
       WHERE r.is_waiting = 1 AND r.status = 'queued' AND t.active_run_id IS NULL AND t.status = 'active'`,
    ).all() as Row[];
    return rows.map((row) => ({ tenantId: row.tenant_id as string, threadId: row.thread_id as string }));
  }

  #findByKey(tenantId: string, key: string): RunRecord | undefined {
    const row = this.#sql("SELECT * FROM runs WHERE tenant_id = ? AND idempotency_key = ?").get(tenantId, key) as
      | Row
      | undefined;
    return row ? toRun(row) : undefined;
  }

  async getRun(tenantId: string, runId: string): Promise<RunRecord | undefined> {
    return this.#run(tenantId, runId);
  }

  async findRunByIdempotencyKey(tenantId: string, key: string): Promise<RunRecord | undefined> {
    return this.#findByKey(tenantId, key);
  }

  async listActiveRuns(tenantId: string, threadId: string): Promise<RunRecord[]> {
    const rows = this.#sql(
      `SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ? AND status NOT IN ('completed', 'failed', 'cancelled')
       ORDER BY created_at`,
    ).all(tenantId, threadId) as Row[];
    return rows.map(toRun);
  }

  async claimRun(input: ClaimRunInput): Promise<RunRecord | undefined> {
    const tx = this.#db.transaction(() => {
      const run = this.#run(input.tenantId, input.runId);
      if (!run || run.status !== "queued") return undefined;
      return this.#setRunStatus(run, "running", input.now, {
        lease_owner: input.owner,
        lease_expires_at: input.leaseExpiresAt,
        started_at: run.startedAt ?? input.now,
      });
    });
    return tx();
  }

  async transitionRun(input: TransitionRunInput): Promise<RunRecord | undefined> {
    const tx = this.#db.transaction(() => {
      const run = this.#run(input.tenantId, input.runId);
      if (!run || !input.from.includes(run.status) || !canTransition(run.status, input.to)) return undefined;
      // A cancel is accepted only through requestCancel (it records its version and checkpoint).
      if (input.to === "cancel_requested" || isTerminalStatus(input.to)) return undefined;
      const columns: Record<string, unknown> = {};
      if (input.activeOperation !== undefined) columns.active_operation = input.activeOperation;
      if (input.to === "queued") {
        // Handed back for another attempt: the lease is released and the attempt counts up.
        columns.lease_owner = null;
        columns.lease_expires_at = null;
        columns.attempt = run.attempt + 1;
      }
      return this.#setRunStatus(run, input.to, input.now, columns);
    });
    return tx();
  }

  async publishMessage(input: PublishMessageInput): Promise<PublishMessageResult> {
    const tx = this.#db.transaction((): PublishMessageResult => {
      const run = this.#run(input.tenantId, input.runId);
      // Sticky terminal status and an accepted cancel both win over a late completion.
      if (!run || run.status !== "running") return { kind: "rejected", run };
      const thread = this.#thread(input.tenantId, run.threadId);
      if (!thread || thread.status !== "active") return { kind: "rejected", run };
      const position = this.#nextPosition(thread);
      const stats = { ...input.stats, messageCount: (input.stats.messageCount ?? 0) + 1 };
      const advanced = this.#advanceThread(
        thread,
        {
          checkpointId: input.checkpointId,
          kind: "message_published",
          runId: input.runId,
          messageId: input.messageId,
          completedStepId: input.completedStepId,
          pendingStep: null,
          resumePolicy: null,
          cancelledGeneration: null,
          createdAt: input.now,
        },
        { stats, positions: 1, ...(input.complete ? { activeRunId: null } : {}) },
      );
      const message: MessageRecord = {
        tenantId: input.tenantId,
        messageId: input.messageId,
        threadId: run.threadId,
        position,
        role: input.role,
        content: input.content,
        runId: input.runId,
        stateVersion: advanced.thread.stateVersion,
        checkpointId: input.checkpointId,
        publicationStatus: "published",
        toolCalls: input.toolCalls?.length ? input.toolCalls : null,
        toolCallId: input.toolCallId ?? null,
        toolName: input.toolName ?? null,
        createdAt: input.now,
      };
      this.#insertMessage(message);
      const runColumns = {
        stats: JSON.stringify(addStats(run.stats, stats)),
        state_version: advanced.thread.stateVersion,
        published_message_id: input.messageId,
      };
      const updated = input.complete
        ? this.#setRunStatus(run, "completed", input.now, {
            ...runColumns,
            ended_at: input.now,
            lease_owner: null,
            lease_expires_at: null,
          })
        : this.#updateRun(run, runColumns);
      return { kind: "published", message, checkpoint: advanced.checkpoint, thread: advanced.thread, run: updated };
    });
    return tx();
  }

  #updateRun(run: RunRecord, columns: Record<string, unknown>): RunRecord {
    const names = Object.keys(columns);
    this.#sql(`UPDATE runs SET ${names.map((name) => `${name} = ?`).join(", ")} WHERE tenant_id = ? AND run_id = ?`).run(
      ...names.map((name) => columns[name]),
      run.tenantId,
      run.runId,
    );
    return this.#run(run.tenantId, run.runId)!;
  }

  async requestCancel(input: RequestCancelInput): Promise<RequestCancelResult> {
    const tx = this.#db.transaction((): RequestCancelResult => {
      const run = this.#run(input.tenantId, input.runId);
      if (!run) return { kind: "not_found" };
      if (isTerminalStatus(run.status)) return { kind: "already_terminal", run };
      if (!isCancellable(run.status)) return { kind: "already_requested", run };
      const thread = this.#thread(input.tenantId, run.threadId)!;
      // A run that never started stops at once; otherwise the worker confirms the stop.
      const neverStarted = run.status === "queued";
      const advanced = this.#advanceThread(
        thread,
        {
          checkpointId: input.checkpointId,
          kind: "cancel_accepted",
          runId: run.runId,
          messageId: null,
          completedStepId: null,
          pendingStep: input.pendingStep,
          // A Stop in a tool step keeps the results already in; one in a model step regenerates it.
          resumePolicy: input.pendingStep?.kind === "tool" ? "reuse_tool_result" : "regenerate_pending_step",
          cancelledGeneration: null,
          createdAt: input.now,
        },
        // A waiting (enqueued) run is not the active one: the active run is left alone.
        neverStarted && thread.activeRunId === run.runId ? { activeRunId: null } : {},
      );
      const columns = {
        is_waiting: 0,
        cancel_requested_at: input.now,
        cancel_reason: input.reason,
        cancel_state_version: advanced.thread.stateVersion,
        cancel_checkpoint_id: input.checkpointId,
        state_version: advanced.thread.stateVersion,
        ...(neverStarted ? { ended_at: input.now } : {}),
      };
      const updated = this.#setRunStatus(run, neverStarted ? "cancelled" : "cancel_requested", input.now, columns);
      return { kind: "accepted", run: updated, thread: advanced.thread, checkpoint: advanced.checkpoint };
    });
    return tx();
  }

  #message(tenantId: string, messageId: string): MessageRecord | undefined {
    const row = this.#sql("SELECT * FROM messages WHERE tenant_id = ? AND message_id = ?").get(tenantId, messageId) as
      | Row
      | undefined;
    return row ? toMessage(row) : undefined;
  }

  async saveFragment(input: SaveFragmentInput): Promise<SaveFragmentResult> {
    const tx = this.#db.transaction((): SaveFragmentResult => {
      const run = this.#run(input.tenantId, input.runId);
      if (!run) return { kind: "run_not_found" };
      if (!isTerminalStatus(run.status)) return { kind: "run_not_terminal", run };
      const existing = this.#message(input.tenantId, input.messageId);
      if (existing) return { kind: "exists", message: existing };
      const thread = this.#thread(input.tenantId, run.threadId);
      if (!thread || thread.status !== "active") return { kind: "thread_not_found" };
      if (thread.activeRunId !== null) return { kind: "run_in_progress", thread };
      // The fragment is appended: it belongs right after its run's own messages, nowhere else.
      const newest = this.#sql(
        "SELECT run_id FROM messages WHERE tenant_id = ? AND thread_id = ? ORDER BY position DESC LIMIT 1",
      ).get(input.tenantId, run.threadId) as { run_id: string | null } | undefined;
      if (newest?.run_id !== run.runId) return { kind: "thread_moved_on", thread };
      const position = this.#nextPosition(thread);
      const advanced = this.#advanceThread(
        thread,
        {
          checkpointId: input.checkpointId,
          kind: "fragment_saved",
          runId: run.runId,
          messageId: input.messageId,
          completedStepId: null,
          pendingStep: null,
          resumePolicy: null,
          cancelledGeneration: null,
          createdAt: input.now,
        },
        { positions: 1 },
      );
      const message: MessageRecord = {
        tenantId: input.tenantId,
        messageId: input.messageId,
        threadId: run.threadId,
        position,
        role: "assistant",
        content: input.content,
        runId: run.runId,
        stateVersion: advanced.thread.stateVersion,
        checkpointId: input.checkpointId,
        publicationStatus: "fragment",
        toolCalls: null,
        toolCallId: null,
        toolName: null,
        createdAt: input.now,
      };
      this.#insertMessage(message);
      return { kind: "saved", message, checkpoint: advanced.checkpoint, thread: advanced.thread };
    });
    return tx.immediate();
  }

  async deleteMessage(input: DeleteMessageInput): Promise<DeleteMessageResult> {
    const tx = this.#db.transaction((): DeleteMessageResult => {
      const thread = this.#thread(input.tenantId, input.threadId);
      if (!thread || thread.status !== "active") return { kind: "thread_not_found" };
      const stored = this.#message(input.tenantId, input.messageId);
      const levels = readLineage(this.#statement, input.tenantId, input.threadId)!;
      // A branch may delete a fragment it shares: the checkpoint records it for this lineage only.
      const message = stored ? messageInLineage(this.#statement, input.tenantId, levels, stored) : undefined;
      if (!message || message.publicationStatus === "deleted") return { kind: "message_not_found" };
      if (message.publicationStatus !== "fragment") return { kind: "not_deletable", message };
      const isInherited = message.threadId !== input.threadId;
      const advanced = this.#advanceThread(
        thread,
        {
          checkpointId: input.checkpointId,
          kind: "message_deleted",
          runId: null,
          messageId: message.messageId,
          completedStepId: null,
          pendingStep: null,
          resumePolicy: null,
          cancelledGeneration: null,
          createdAt: input.now,
        },
        {},
      );
      if (isInherited) return { kind: "deleted", message: { ...message, publicationStatus: "deleted" }, checkpoint: advanced.checkpoint, thread: advanced.thread };
      // Append-only: the row keeps the version and checkpoint that saved it; the new checkpoint records the delete.
      const result = this.#sql(
        `UPDATE messages SET publication_status = 'deleted'
         WHERE tenant_id = ? AND message_id = ? AND publication_status = 'fragment'`,
      ).run(input.tenantId, input.messageId);
      if (result.changes !== 1) throw new Error(`message status compare-and-set failed for ${input.messageId}`);
      return {
        kind: "deleted",
        message: { ...message, publicationStatus: "deleted" },
        checkpoint: advanced.checkpoint,
        thread: advanced.thread,
      };
    });
    return tx.immediate();
  }

  async finishRun(input: FinishRunInput): Promise<RunRecord | undefined> {
    const tx = this.#db.transaction(() => {
      const run = this.#run(input.tenantId, input.runId);
      if (!run || !input.from.includes(run.status) || !canTransition(run.status, input.to)) return undefined;
      // Only a cancel that requestCancel accepted can end as cancelled.
      if (input.to === "cancelled" && run.cancelCheckpointId === null) return undefined;
      const thread = this.#thread(input.tenantId, run.threadId);
      if (thread) {
        const stats = addStats(thread.stats, input.stats);
        const clearActive = thread.activeRunId === run.runId;
        this.#sql(
          `UPDATE threads SET stats = ?, active_run_id = CASE WHEN ? THEN NULL ELSE active_run_id END, updated_at = ?
           WHERE tenant_id = ? AND thread_id = ?`,
        ).run(JSON.stringify(stats), clearActive ? 1 : 0, input.now, thread.tenantId, thread.threadId);
      }
      if (input.cancelledGeneration && run.cancelCheckpointId) {
        // Completes the cancel checkpoint's facts once the worker has stopped; never overwritten.
        this.#sql(
          `UPDATE checkpoints SET cancelled_generation = ?
           WHERE tenant_id = ? AND checkpoint_id = ? AND cancelled_generation IS NULL`,
        ).run(JSON.stringify(input.cancelledGeneration), run.tenantId, run.cancelCheckpointId);
      }
      return this.#setRunStatus(run, input.to, input.now, {
        stats: JSON.stringify(addStats(run.stats, input.stats)),
        failure_reason: input.failureReason ?? null,
        failure_message: input.failureMessage ?? null,
        active_operation: null,
        lease_owner: null,
        lease_expires_at: null,
        ended_at: input.now,
      });
    });
    return tx();
  }

  async releaseLease(tenantId: string, runId: string, owner: string): Promise<void> {
    this.#sql(
      `UPDATE runs SET lease_owner = NULL, lease_expires_at = 0
       WHERE tenant_id = ? AND run_id = ? AND lease_owner = ? AND status NOT IN ('completed', 'failed', 'cancelled')`,
    ).run(tenantId, runId, owner);
  }

  async renewLeases(owner: string, leaseExpiresAt: number): Promise<number> {
    return this.#sql(
      `UPDATE runs SET lease_expires_at = ?
       WHERE lease_owner = ? AND status NOT IN ('completed', 'failed', 'cancelled')`,
    ).run(leaseExpiresAt, owner).changes;
  }

  async listRecoverableRuns(now: number, orphanedBefore: number): Promise<RunRecord[]> {
    const rows = this.#sql(
      `SELECT * FROM runs WHERE status NOT IN ('completed', 'failed', 'cancelled')
         AND ((lease_expires_at IS NOT NULL AND lease_expires_at < ?)
           OR (status = 'queued' AND is_waiting = 0 AND lease_owner IS NULL AND created_at < ?))
       ORDER BY created_at`,
    ).all(now, orphanedBefore) as Row[];
    return rows.map(toRun);
  }

  #operation(tenantId: string, opId: string): OperationRecord | undefined {
    const row = this.#sql("SELECT * FROM operations WHERE tenant_id = ? AND op_id = ?").get(tenantId, opId) as
      | Row
      | undefined;
    return row ? toOperation(row) : undefined;
  }

  #operationByKey(tenantId: string, key: string): OperationRecord | undefined {
    const row = this.#sql("SELECT * FROM operations WHERE tenant_id = ? AND idempotency_key = ?").get(tenantId, key) as
      | Row
      | undefined;
    return row ? toOperation(row) : undefined;
  }

  /** The thread's operations, oldest first; only those in `phase` when given. */
  #operationsOfThread(tenantId: string, threadId: string, phase?: OperationPhase): OperationRecord[] {
    const rows = (
      phase === undefined
        ? this.#sql("SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at, op_id").all(
            tenantId,
            threadId,
          )
        : this.#sql(
            "SELECT * FROM operations WHERE tenant_id = ? AND thread_id = ? AND phase = ? ORDER BY created_at, op_id",
          ).all(tenantId, threadId, phase)
    ) as Row[];
    return rows.map(toOperation);
  }

  /** Moves an operation from `from` to `to` by compare-and-set on its phase; false when it was not in `from`. */
  #setPhase(
    operation: OperationRecord,
    from: OperationPhase,
    to: OperationPhase,
    now: number,
    columns: Record<string, unknown> = {},
  ): boolean {
    const names = Object.keys(columns);
    const assignments = names.map((name) => `, ${name} = ?`).join("");
    const result = this.#sql(
      `UPDATE operations SET phase = ?, updated_at = ?${assignments} WHERE tenant_id = ? AND op_id = ? AND phase = ?`,
    ).run(to, now, ...names.map((name) => columns[name]), operation.tenantId, operation.opId, from);
    return result.changes === 1;
  }

  async prepareOperation(input: PrepareOperationInput): Promise<PrepareOperationResult> {
    // IMMEDIATE: the write lock is taken before the key is read, so two connections cannot both see it free.
    const tx = this.#db.transaction((): PrepareOperationResult => {
      const existing = this.#operationByKey(input.tenantId, input.idempotencyKey);
      const run = this.#run(input.tenantId, input.runId);
      const thread = this.#thread(input.tenantId, input.threadId);
      if (!run || run.status !== "running" || run.threadId !== input.threadId || thread?.status !== "active") {
        return { kind: "refused", operation: existing, reason: "run_not_running" };
      }
      if (existing?.phase === "committed") return { kind: "committed", operation: existing };
      if (existing?.phase === "outcome_unknown") return { kind: "refused", operation: existing, reason: "outcome_unknown" };
      if (existing?.phase === "prepared" || existing?.phase === "committing") {
        return { kind: "refused", operation: existing, reason: "in_progress" };
      }
      const advanced = this.#advanceThread(
        thread,
        {
          checkpointId: input.checkpointId,
          kind: "operation_prepared",
          runId: input.runId,
          messageId: null,
          completedStepId: null,
          pendingStep: null,
          resumePolicy: null,
          cancelledGeneration: null,
          createdAt: input.now,
        },
        {},
      );
      this.#updateRun(run, { state_version: advanced.thread.stateVersion });
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
        if (!this.#setPhase(existing, existing.phase, "prepared", input.now, taken)) {
          throw new Error(`operation phase compare-and-set failed for ${existing.opId}`);
        }
      } else {
        this.#sql(
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
      const operation = this.#operation(input.tenantId, existing?.opId ?? input.opId)!;
      return { kind: "prepared", operation, checkpoint: advanced.checkpoint, thread: advanced.thread };
    });
    return tx.immediate();
  }

  async beginCommit(input: { tenantId: string; opId: string; runId: string; now: number }): Promise<BeginCommitResult> {
    const tx = this.#db.transaction((): BeginCommitResult => {
      const operation = this.#operation(input.tenantId, input.opId);
      const run = this.#run(input.tenantId, input.runId);
      // The run's status is read in the same transaction as the phase is set: a cancel accepted
      // before this point is seen here, and one accepted after it finds the commit handed over.
      const isHandedOver =
        operation?.phase === "prepared" &&
        operation.runId === input.runId &&
        run?.status === "running" &&
        this.#setPhase(operation, "prepared", "committing", input.now, { commit_attempts: operation.commitAttempts + 1 });
      if (!isHandedOver) return { kind: "refused", operation, runStatus: run?.status };
      this.#updateRun(run, { active_operation: operation.opId });
      return { kind: "committing", operation: this.#operation(input.tenantId, input.opId)! };
    });
    return tx.immediate();
  }

  async finishOperation(input: FinishOperationInput): Promise<OperationRecord | undefined> {
    const tx = this.#db.transaction(() => {
      const operation = this.#operation(input.tenantId, input.opId);
      const columns =
        input.phase === "committed"
          ? { result: jsonColumn(input.result), error: null }
          : { result: null, error: input.error ?? null };
      if (!operation || !this.#setPhase(operation, "committing", input.phase, input.now, columns)) return undefined;
      this.#sql(
        "UPDATE runs SET active_operation = NULL WHERE tenant_id = ? AND run_id = ? AND active_operation = ?",
      ).run(operation.tenantId, operation.runId, operation.opId);
      return this.#operation(input.tenantId, input.opId);
    });
    return tx.immediate();
  }

  async abandonOperation(input: { tenantId: string; opId: string; now: number }): Promise<OperationRecord | undefined> {
    const tx = this.#db.transaction(() => {
      const operation = this.#operation(input.tenantId, input.opId);
      if (!operation || !this.#setPhase(operation, "prepared", "abandoned", input.now)) return undefined;
      return this.#operation(input.tenantId, input.opId);
    });
    return tx.immediate();
  }

  async markOutcomesUnknown(tenantId: string, runId: string, now: number): Promise<OperationRecord[]> {
    const tx = this.#db.transaction(() => {
      const rows = this.#sql(
        "SELECT * FROM operations WHERE tenant_id = ? AND run_id = ? AND phase = 'committing' ORDER BY created_at, op_id",
      ).all(tenantId, runId) as Row[];
      const marked: OperationRecord[] = [];
      for (const operation of rows.map(toOperation)) {
        if (this.#setPhase(operation, "committing", "outcome_unknown", now)) marked.push(this.#operation(tenantId, operation.opId)!);
      }
      return marked;
    });
    return tx.immediate();
  }

  async confirmOperation(input: ConfirmOperationInput): Promise<OperationRecord | undefined> {
    const tx = this.#db.transaction(() => {
      const operation = this.#operation(input.tenantId, input.opId);
      const thread = this.#thread(input.tenantId, input.threadId);
      if (!operation || operation.threadId !== input.threadId || operation.phase !== "outcome_unknown" || !thread) {
        return undefined;
      }
      const isCommitted = input.outcome === "committed";
      const columns = { result: isCommitted ? jsonColumn(input.result) : null };
      if (!this.#setPhase(operation, "outcome_unknown", isCommitted ? "committed" : "abandoned", input.now, columns)) {
        return undefined;
      }
      this.#advanceThread(
        thread,
        {
          checkpointId: input.checkpointId,
          kind: "operation_confirmed",
          runId: null,
          messageId: null,
          completedStepId: null,
          pendingStep: null,
          resumePolicy: null,
          cancelledGeneration: null,
          createdAt: input.now,
        },
        {},
      );
      return this.#operation(input.tenantId, input.opId);
    });
    return tx.immediate();
  }

  async getOperation(tenantId: string, opId: string): Promise<OperationRecord | undefined> {
    return this.#operation(tenantId, opId);
  }

  async listOperations(tenantId: string, threadId: string): Promise<OperationRecord[]> {
    return this.#db.transaction(() => {
      const levels = readLineage(this.#statement, tenantId, threadId);
      return levels ? readLineageOperations(this.#statement, tenantId, levels) : [];
    })();
  }

  async appendTrace(trace: TraceRecord): Promise<void> {
    this.#sql("INSERT INTO traces (trace_id, tenant_id, run_id, thread_id, kind, data, at) VALUES (?, ?, ?, ?, ?, ?, ?)").run(
      trace.traceId,
      trace.tenantId,
      trace.runId,
      trace.threadId,
      trace.kind,
      JSON.stringify(trace.data),
      trace.at,
    );
  }

  async listTraces(tenantId: string, runId: string): Promise<TraceRecord[]> {
    const rows = this.#sql("SELECT * FROM traces WHERE tenant_id = ? AND run_id = ? ORDER BY at, rowid").all(
      tenantId,
      runId,
    ) as Row[];
    return rows.map(toTrace);
  }

  async *scanThreads(): AsyncIterable<ThreadSnapshot> {
    const keys = this.#sql("SELECT tenant_id, thread_id FROM threads ORDER BY tenant_id, thread_id").all() as Row[];
    for (const key of keys) {
      const snapshot = this.#snapshot(key.tenant_id as string, key.thread_id as string);
      if (snapshot) yield snapshot;
    }
  }

  /** One thread's rows read in one transaction, so a concurrent write cannot tear the snapshot. */
  #snapshot(tenantId: string, threadId: string): ThreadSnapshot | undefined {
    return this.#db.transaction(() => {
      const thread = this.#thread(tenantId, threadId);
      if (!thread) return undefined;
      const all = (sql: string) => this.#sql(sql).all(tenantId, threadId) as Row[];
      return {
        thread,
        runs: all("SELECT * FROM runs WHERE tenant_id = ? AND thread_id = ? ORDER BY created_at").map(toRun),
        transitions: all(
          `SELECT t.* FROM run_transitions t JOIN runs r ON r.tenant_id = t.tenant_id AND r.run_id = t.run_id
           WHERE r.tenant_id = ? AND r.thread_id = ? ORDER BY t.run_id, t.ordinal`,
        ).map(toTransition),
        messages: all("SELECT * FROM messages WHERE tenant_id = ? AND thread_id = ? ORDER BY position").map(toMessage),
        checkpoints: all("SELECT * FROM checkpoints WHERE tenant_id = ? AND thread_id = ? ORDER BY state_version").map(toCheckpoint),
        operations: this.#operationsOfThread(tenantId, threadId),
        ...this.#inherited(tenantId, threadId),
      };
    })();
  }

  /** A branch's shared prefix, as `tidemark check` needs it; nothing for a root thread. */
  #inherited(tenantId: string, threadId: string): Pick<ThreadSnapshot, "inheritedCheckpoints" | "inheritedMessages"> {
    const levels = readLineage(this.#statement, tenantId, threadId);
    if (!levels || levels.length < 2) return {};
    const ancestors = levels.slice(0, -1);
    return {
      inheritedCheckpoints: readLineageCheckpoints(this.#statement, tenantId, ancestors),
      inheritedMessages: readLineageMessages(this.#statement, tenantId, levels).filter((message) => message.threadId !== threadId),
    };
  }

  async close(): Promise<void> {
    await this.#checkpointer?.close();
    if (this.#db.open) this.#db.close();
  }
}
