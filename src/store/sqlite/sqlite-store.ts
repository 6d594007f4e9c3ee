/** The SQLite adapter: `createSqliteStore` and the `Store` it returns, which delegates each method to its concern's module. */
import Database from "better-sqlite3";
import type { CheckpointRecord, MessageRecord, OperationRecord, RunRecord, ThreadRecord, TraceRecord } from "../../core/index.js";
import type {
  BeginCommitInput,
  BeginCommitResult,
  ClaimQueuedRunsInput,
  ClaimRunInput,
  ConfirmOperationInput,
  CreateRunInput,
  CreateRunResult,
  CreateThreadInput,
  DeleteThreadInput,
  DeleteThreadResult,
  DeleteMessageInput,
  DeleteMessageResult,
  FinishOperationInput,
  FinishRunInput,
  ForkThreadInput,
  ForkThreadResult,
  ListCheckpointsOptions,
  ListMessagesOptions,
  ListThreadsOptions,
  PrepareOperationInput,
  PrepareOperationResult,
  PublishMessageInput,
  PublishMessageResult,
  RequestCancelInput,
  RequestCancelResult,
  SaveFragmentInput,
  SaveFragmentResult,
  Store,
  TakeOverLeaseInput,
  ThreadSnapshot,
  TransitionRunInput,
} from "../store.js";
import { deleteMessage, saveFragment } from "./message-edits.js";
import { migrate } from "./migrations.js";
import {
  abandonOperation,
  beginCommit,
  confirmOperation,
  finishOperation,
  getOperation,
  listOperations,
  markOutcomesUnknown,
  prepareOperation,
} from "./operation-ledger.js";
import { admitNextRun, createRun } from "./run-admission.js";
import { claimQueuedRuns, listCancelledRuns, listRecoverableRuns, releaseLease, renewLeases, takeOverLease } from "./run-leases.js";
import { findRunByIdempotencyKey, listActiveRuns, listThreadsWithWaitingRuns } from "./run-queries.js";
import { claimRun, finishRun, publishMessage, requestCancel, transitionRun } from "./run-transitions.js";
import { scanThreads } from "./snapshots.js";
import { SqliteContext } from "./sqlite-context.js";
import { createThread, deleteThread, forkThread, getThread, listCheckpoints, listMessages, listThreads, renameThread, saveTitle } from "./thread-queries.js";
import { appendTrace, listTraces } from "./traces.js";
import { startWalCheckpointer, type WalCheckpointer, type WalCheckpointProgress } from "./wal-checkpointer.js";

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
  /** Each background checkpoint's progress (tests wait on it). */
  onWalCheckpoint?: (progress: WalCheckpointProgress) => void;
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
  return new SqliteStore(db, startWalCheckpointer(options.path, intervalMs, options.onBackgroundError ?? (() => {}), options.onWalCheckpoint));
}

/**
 * The `Store` over one connection. Each method runs its concern's function; a method that ran in
 * one transaction still runs in exactly that one.
 */
class SqliteStore implements Store {
  readonly #context: SqliteContext;
  readonly #checkpointer: WalCheckpointer | undefined;

  constructor(db: Database.Database, checkpointer: WalCheckpointer | undefined) {
    this.#context = new SqliteContext(db);
    this.#checkpointer = checkpointer;
  }

  async createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    return createThread(this.#context, input);
  }

  async getThread(tenantId: string, threadId: string): Promise<ThreadRecord | undefined> {
    return getThread(this.#context, tenantId, threadId);
  }

  async listThreads(tenantId: string, options: ListThreadsOptions): Promise<ThreadRecord[]> {
    return listThreads(this.#context, tenantId, options);
  }

  async deleteThread(input: DeleteThreadInput): Promise<DeleteThreadResult> {
    return deleteThread(this.#context, input);
  }

  async saveTitle(tenantId: string, threadId: string, title: string, now: number): Promise<void> {
    saveTitle(this.#context, tenantId, threadId, title, now);
  }

  async renameThread(tenantId: string, threadId: string, title: string, now: number): Promise<ThreadRecord | undefined> {
    return renameThread(this.#context, tenantId, threadId, title, now);
  }

  async listMessages(tenantId: string, threadId: string, options: ListMessagesOptions = {}): Promise<MessageRecord[]> {
    return listMessages(this.#context, tenantId, threadId, options);
  }

  async listCheckpoints(tenantId: string, threadId: string, options: ListCheckpointsOptions = {}): Promise<CheckpointRecord[]> {
    return listCheckpoints(this.#context, tenantId, threadId, options);
  }

  async forkThread(input: ForkThreadInput): Promise<ForkThreadResult> {
    return forkThread(this.#context, input);
  }

  async createRun(input: CreateRunInput): Promise<CreateRunResult> {
    return createRun(this.#context, input);
  }

  async admitNextRun(tenantId: string, threadId: string, checkpointId: string, now: number): Promise<RunRecord | undefined> {
    return admitNextRun(this.#context, tenantId, threadId, checkpointId, now);
  }

  async listThreadsWithWaitingRuns(): Promise<{ tenantId: string; threadId: string }[]> {
    return listThreadsWithWaitingRuns(this.#context);
  }

  async getRun(tenantId: string, runId: string): Promise<RunRecord | undefined> {
    return this.#context.run(tenantId, runId);
  }

  async findRunByIdempotencyKey(tenantId: string, key: string): Promise<RunRecord | undefined> {
    return findRunByIdempotencyKey(this.#context, tenantId, key);
  }

  async listActiveRuns(tenantId: string, threadId: string): Promise<RunRecord[]> {
    return listActiveRuns(this.#context, tenantId, threadId);
  }

  async claimRun(input: ClaimRunInput): Promise<RunRecord | undefined> {
    return claimRun(this.#context, input);
  }

  async claimQueuedRuns(input: ClaimQueuedRunsInput): Promise<RunRecord[]> {
    return claimQueuedRuns(this.#context, input);
  }

  async takeOverLease(input: TakeOverLeaseInput): Promise<boolean> {
    return takeOverLease(this.#context, input);
  }

  async listCancelledRuns(owner: string): Promise<RunRecord[]> {
    return listCancelledRuns(this.#context, owner);
  }

  async transitionRun(input: TransitionRunInput): Promise<RunRecord | undefined> {
    return transitionRun(this.#context, input);
  }

  async publishMessage(input: PublishMessageInput): Promise<PublishMessageResult> {
    return publishMessage(this.#context, input);
  }

  async requestCancel(input: RequestCancelInput): Promise<RequestCancelResult> {
    return requestCancel(this.#context, input);
  }

  async saveFragment(input: SaveFragmentInput): Promise<SaveFragmentResult> {
    return saveFragment(this.#context, input);
  }

  async deleteMessage(input: DeleteMessageInput): Promise<DeleteMessageResult> {
    return deleteMessage(this.#context, input);
  }

  async finishRun(input: FinishRunInput): Promise<RunRecord | undefined> {
    return finishRun(this.#context, input);
  }

  async releaseLease(tenantId: string, runId: string, owner: string): Promise<void> {
    releaseLease(this.#context, tenantId, runId, owner);
  }

  async renewLeases(owner: string, leaseExpiresAt: number): Promise<number> {
    return renewLeases(this.#context, owner, leaseExpiresAt);
  }

  async listRecoverableRuns(now: number, orphanedBefore: number): Promise<RunRecord[]> {
    return listRecoverableRuns(this.#context, now, orphanedBefore);
  }

  async prepareOperation(input: PrepareOperationInput): Promise<PrepareOperationResult> {
    return prepareOperation(this.#context, input);
  }

  async beginCommit(input: BeginCommitInput): Promise<BeginCommitResult> {
    return beginCommit(this.#context, input);
  }

  async finishOperation(input: FinishOperationInput): Promise<OperationRecord | undefined> {
    return finishOperation(this.#context, input);
  }

  async abandonOperation(input: { tenantId: string; opId: string; now: number }): Promise<OperationRecord | undefined> {
    return abandonOperation(this.#context, input);
  }

  async markOutcomesUnknown(tenantId: string, runId: string, now: number): Promise<OperationRecord[]> {
    return markOutcomesUnknown(this.#context, tenantId, runId, now);
  }

  async confirmOperation(input: ConfirmOperationInput): Promise<OperationRecord | undefined> {
    return confirmOperation(this.#context, input);
  }

  async getOperation(tenantId: string, opId: string): Promise<OperationRecord | undefined> {
    return getOperation(this.#context, tenantId, opId);
  }

  async listOperations(tenantId: string, threadId: string): Promise<OperationRecord[]> {
    return listOperations(this.#context, tenantId, threadId);
  }

  async appendTrace(trace: TraceRecord): Promise<void> {
    appendTrace(this.#context, trace);
  }

  async listTraces(tenantId: string, runId: string): Promise<TraceRecord[]> {
    return listTraces(this.#context, tenantId, runId);
  }

  scanThreads(): AsyncIterable<ThreadSnapshot> {
    return scanThreads(this.#context);
  }

  async close(): Promise<void> {
    await this.#checkpointer?.close();
    if (this.#context.db.open) this.#context.db.close();
  }
}
