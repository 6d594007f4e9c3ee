/** The PostgreSQL adapter: `createPostgresStore` and the `Store` it returns, which delegates each method to its concern's module. */
import pg from "pg";
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
import { PgContext } from "./pg-context.js";
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
import { createThread, deleteThread, forkThread, getThread, listCheckpoints, listMessages, listThreads, renameThread, saveTitle } from "./thread-queries.js";
import { appendTrace, listTraces } from "./traces.js";

/** Options for {@link createPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user@host:port/database`. */
  url: string;
  /** A schema of its own (created if missing), e.g. one per test; default the connection's search_path. */
  schema?: string;
  /** Connections in the pool (default 10). */
  poolSize?: number;
}

/** int8 (BIGINT, COUNT) as a JavaScript number: every value here is a time, a count or a version, far below 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** Connects a pool to the database (in its own schema when one is named). */
export function createPool(options: PostgresStoreOptions): pg.Pool {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new Error(`Not a schema name: ${options.schema}`);
  }
  return new pg.Pool({
    connectionString: options.url,
    max: options.poolSize ?? 10,
    types: TYPES,
    options: options.schema ? `-c search_path=${options.schema}` : undefined,
  });
}

/**
 * The scaled store: one PostgreSQL database shared by every API and worker process. Migrations
 * run under an advisory lock, so processes that start together apply them once.
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const pool = createPool(options);
  try {
    if (options.schema) {
      // Processes that start together race to create it: the loser finds it there.
      await pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`).catch((error: { code?: string }) => {
        if (error.code !== "23505" && error.code !== "42P06") throw error;
      });
    }
    await migrate(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return new PostgresStore(pool);
}

/**
 * The `Store` over a pool. Each method runs its concern's function; a method that ran in one
 * transaction still runs in exactly that one (locking the rows it decides on; see pg-context.ts).
 */
class PostgresStore implements Store {
  readonly #context: PgContext;
  #isClosed = false;

  constructor(pool: pg.Pool) {
    this.#context = new PgContext(pool);
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
    await saveTitle(this.#context, tenantId, threadId, title, now);
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
    await releaseLease(this.#context, tenantId, runId, owner);
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
    await appendTrace(this.#context, trace);
  }

  async listTraces(tenantId: string, runId: string): Promise<TraceRecord[]> {
    return listTraces(this.#context, tenantId, runId);
  }

  scanThreads(): AsyncIterable<ThreadSnapshot> {
    return scanThreads(this.#context);
  }

  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    await this.#context.pool.end();
  }
}
