/** The SQL store: the `Store` over any {@link SqlDriver}, each method delegating to its concern's module. */
import type { CheckpointRecord, MessageRecord, OperationRecord, RunRecord, RunStepRecord, ThreadRecord, TraceRecord } from "../../core/index.js";
import type {
  BeginCommitInput,
  BeginCommitResult,
  ClaimQueuedRunsInput,
  ClaimRunInput,
  CompleteStepInput,
  CompleteStepResult,
  ConfirmOperationInput,
  CreateRunInput,
  CreateRunResult,
  CreateThreadInput,
  DeleteThreadInput,
  DeleteThreadResult,
  DeleteMessageInput,
  DeleteMessageResult,
  RollbackRunInput,
  RollbackRunResult,
  FinishOperationInput,
  FinishRunInput,
  ForkThreadInput,
  ForkThreadResult,
  ListCheckpointsOptions,
  ExecutionView,
  ReadExecutionViewOptions,
  ListMessagesOptions,
  ListThreadsOptions,
  PrepareOperationInput,
  PruneBatchInput,
  RetentionLayer,
  EraseThreadInput,
  EraseThreadResult,
  PrepareOperationResult,
  PublishMessageInput,
  PublishMessageResult,
  QueuedRunCounts,
  RequestCancelInput,
  RequestCancelResult,
  SaveFragmentInput,
  SaveFragmentResult,
  SaveStepsInput,
  CallOptions,
  RenewLeasesOptions,
  Store,
  TakeOverLeaseInput,
  ThreadSnapshot,
  TransitionRunInput,
} from "../store.js";
import { deleteMessage, saveFragment } from "./message-edits.js";
import { rollbackRun } from "./run-rollback.js";
import { SqlContext } from "./sql-context.js";
import type { SqlDriver } from "./sql-driver.js";
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
import { completeStep, listRunSteps, saveSteps } from "./run-steps.js";
import { claimQueuedRuns, listCancelledRuns, listRecoverableRuns, releaseLease, renewLeases, takeOverLease } from "./run-leases.js";
import { countQueuedRuns, findRunByIdempotencyKey, listActiveRuns, listThreadsWithWaitingRuns } from "./run-queries.js";
import { claimRun, finishRun, publishMessage, requestCancel, transitionRun } from "./run-transitions.js";
import { scanThreads } from "./snapshots.js";
import {
  createThread,
  deleteThread,
  forkThread,
  getThread,
  listCheckpoints,
  listMessages,
  listThreads,
  readExecutionView,
  renameThread,
  saveTitle,
} from "./thread-queries.js";
import { appendTrace, listTraces } from "./traces.js";
import { countExpired, pruneExpired } from "./retention.js";
import { eraseThread, listErasableThreads } from "./thread-erasure.js";

/**
 * The `Store` over a driver. Each method runs its concern's function; a method that ran in one
 * transaction still runs in exactly that one (locking the rows it decides on; see sql-context.ts).
 */
export class SqlStore implements Store {
  readonly #context: SqlContext;
  #isClosed = false;

  constructor(driver: SqlDriver) {
    this.#context = new SqlContext(driver);
  }

  async createThread(input: CreateThreadInput, options: CallOptions = {}): Promise<ThreadRecord> {
    options.signal?.throwIfAborted();
    return createThread(this.#context, input);
  }

  async getThread(tenantId: string, threadId: string, options: CallOptions = {}): Promise<ThreadRecord | undefined> {
    options.signal?.throwIfAborted();
    return getThread(this.#context, tenantId, threadId);
  }

  async listThreads(tenantId: string, options: ListThreadsOptions): Promise<ThreadRecord[]> {
    options.signal?.throwIfAborted();
    return listThreads(this.#context, tenantId, options);
  }

  async deleteThread(input: DeleteThreadInput, options: CallOptions = {}): Promise<DeleteThreadResult> {
    options.signal?.throwIfAborted();
    return deleteThread(this.#context, input);
  }

  async saveTitle(tenantId: string, threadId: string, title: string, now: number, options: CallOptions = {}): Promise<void> {
    options.signal?.throwIfAborted();
    await saveTitle(this.#context, tenantId, threadId, title, now);
  }

  async renameThread(tenantId: string, threadId: string, title: string, now: number, options: CallOptions = {}): Promise<ThreadRecord | undefined> {
    options.signal?.throwIfAborted();
    return renameThread(this.#context, tenantId, threadId, title, now);
  }

  async listMessages(tenantId: string, threadId: string, options: ListMessagesOptions = {}): Promise<MessageRecord[]> {
    options.signal?.throwIfAborted();
    return listMessages(this.#context, tenantId, threadId, options);
  }

  async listCheckpoints(tenantId: string, threadId: string, options: ListCheckpointsOptions = {}): Promise<CheckpointRecord[]> {
    options.signal?.throwIfAborted();
    return listCheckpoints(this.#context, tenantId, threadId, options);
  }

  async readExecutionView(tenantId: string, threadId: string, options: ReadExecutionViewOptions): Promise<ExecutionView> {
    options.signal?.throwIfAborted();
    return readExecutionView(this.#context, tenantId, threadId, options);
  }

  async forkThread(input: ForkThreadInput, options: CallOptions = {}): Promise<ForkThreadResult> {
    options.signal?.throwIfAborted();
    return forkThread(this.#context, input);
  }

  async createRun(input: CreateRunInput, options: CallOptions = {}): Promise<CreateRunResult> {
    options.signal?.throwIfAborted();
    return createRun(this.#context, input);
  }

  async admitNextRun(tenantId: string, threadId: string, checkpointId: string, now: number, options: CallOptions = {}): Promise<RunRecord | undefined> {
    options.signal?.throwIfAborted();
    return admitNextRun(this.#context, tenantId, threadId, checkpointId, now);
  }

  async listThreadsWithWaitingRuns(options: CallOptions = {}): Promise<{ tenantId: string; threadId: string }[]> {
    options.signal?.throwIfAborted();
    return listThreadsWithWaitingRuns(this.#context);
  }

  async countQueuedRuns(options: CallOptions = {}): Promise<QueuedRunCounts> {
    options.signal?.throwIfAborted();
    return countQueuedRuns(this.#context);
  }

  async getRun(tenantId: string, runId: string, options: CallOptions = {}): Promise<RunRecord | undefined> {
    options.signal?.throwIfAborted();
    return this.#context.run(tenantId, runId);
  }

  async findRunByIdempotencyKey(tenantId: string, key: string, options: CallOptions = {}): Promise<RunRecord | undefined> {
    options.signal?.throwIfAborted();
    return findRunByIdempotencyKey(this.#context, tenantId, key);
  }

  async listActiveRuns(tenantId: string, threadId: string, options: CallOptions = {}): Promise<RunRecord[]> {
    options.signal?.throwIfAborted();
    return listActiveRuns(this.#context, tenantId, threadId);
  }

  async claimRun(input: ClaimRunInput, options: CallOptions = {}): Promise<RunRecord | undefined> {
    options.signal?.throwIfAborted();
    return claimRun(this.#context, input);
  }

  async claimQueuedRuns(input: ClaimQueuedRunsInput, options: CallOptions = {}): Promise<RunRecord[]> {
    options.signal?.throwIfAborted();
    return claimQueuedRuns(this.#context, input);
  }

  async takeOverLease(input: TakeOverLeaseInput, options: CallOptions = {}): Promise<boolean> {
    options.signal?.throwIfAborted();
    return takeOverLease(this.#context, input);
  }

  async listCancelledRuns(owner: string, options: CallOptions = {}): Promise<RunRecord[]> {
    options.signal?.throwIfAborted();
    return listCancelledRuns(this.#context, owner);
  }

  async transitionRun(input: TransitionRunInput, options: CallOptions = {}): Promise<RunRecord | undefined> {
    options.signal?.throwIfAborted();
    return transitionRun(this.#context, input);
  }

  async publishMessage(input: PublishMessageInput, options: CallOptions = {}): Promise<PublishMessageResult> {
    options.signal?.throwIfAborted();
    return publishMessage(this.#context, input);
  }

  async requestCancel(input: RequestCancelInput, options: CallOptions = {}): Promise<RequestCancelResult> {
    options.signal?.throwIfAborted();
    return requestCancel(this.#context, input);
  }

  async saveFragment(input: SaveFragmentInput, options: CallOptions = {}): Promise<SaveFragmentResult> {
    options.signal?.throwIfAborted();
    return saveFragment(this.#context, input);
  }

  async deleteMessage(input: DeleteMessageInput, options: CallOptions = {}): Promise<DeleteMessageResult> {
    options.signal?.throwIfAborted();
    return deleteMessage(this.#context, input);
  }

  async rollbackRun(input: RollbackRunInput, options: CallOptions = {}): Promise<RollbackRunResult> {
    options.signal?.throwIfAborted();
    return rollbackRun(this.#context, input);
  }

  async finishRun(input: FinishRunInput, options: CallOptions = {}): Promise<RunRecord | undefined> {
    options.signal?.throwIfAborted();
    return finishRun(this.#context, input);
  }

  async saveSteps(input: SaveStepsInput, options: CallOptions = {}): Promise<void> {
    options.signal?.throwIfAborted();
    await saveSteps(this.#context, input);
  }

  async completeStep(input: CompleteStepInput, options: CallOptions = {}): Promise<CompleteStepResult> {
    options.signal?.throwIfAborted();
    return completeStep(this.#context, input);
  }

  async listRunSteps(tenantId: string, runId: string, options: CallOptions = {}): Promise<RunStepRecord[]> {
    options.signal?.throwIfAborted();
    return listRunSteps(this.#context, tenantId, runId);
  }

  async releaseLease(tenantId: string, runId: string, owner: string, options: CallOptions = {}): Promise<void> {
    options.signal?.throwIfAborted();
    await releaseLease(this.#context, tenantId, runId, owner);
  }

  async renewLeases(owner: string, leaseExpiresAt: number, options: RenewLeasesOptions = {}): Promise<number> {
    options.signal?.throwIfAborted();
    return renewLeases(this.#context, owner, leaseExpiresAt, options.runs);
  }

  async listRecoverableRuns(now: number, orphanedBefore: number, options: CallOptions = {}): Promise<RunRecord[]> {
    options.signal?.throwIfAborted();
    return listRecoverableRuns(this.#context, now, orphanedBefore);
  }

  async prepareOperation(input: PrepareOperationInput, options: CallOptions = {}): Promise<PrepareOperationResult> {
    options.signal?.throwIfAborted();
    return prepareOperation(this.#context, input);
  }

  async beginCommit(input: BeginCommitInput, options: CallOptions = {}): Promise<BeginCommitResult> {
    options.signal?.throwIfAborted();
    return beginCommit(this.#context, input);
  }

  async finishOperation(input: FinishOperationInput, options: CallOptions = {}): Promise<OperationRecord | undefined> {
    options.signal?.throwIfAborted();
    return finishOperation(this.#context, input);
  }

  async abandonOperation(input: { tenantId: string; opId: string; now: number }, options: CallOptions = {}): Promise<OperationRecord | undefined> {
    options.signal?.throwIfAborted();
    return abandonOperation(this.#context, input);
  }

  async markOutcomesUnknown(tenantId: string, runId: string, now: number, options: CallOptions = {}): Promise<OperationRecord[]> {
    options.signal?.throwIfAborted();
    return markOutcomesUnknown(this.#context, tenantId, runId, now);
  }

  async confirmOperation(input: ConfirmOperationInput, options: CallOptions = {}): Promise<OperationRecord | undefined> {
    options.signal?.throwIfAborted();
    return confirmOperation(this.#context, input);
  }

  async getOperation(tenantId: string, opId: string, options: CallOptions = {}): Promise<OperationRecord | undefined> {
    options.signal?.throwIfAborted();
    return getOperation(this.#context, tenantId, opId);
  }

  async listOperations(tenantId: string, threadId: string, options: CallOptions = {}): Promise<OperationRecord[]> {
    options.signal?.throwIfAborted();
    return listOperations(this.#context, tenantId, threadId);
  }

  async eraseThread(input: EraseThreadInput, options: CallOptions = {}): Promise<EraseThreadResult> {
    options.signal?.throwIfAborted();
    return eraseThread(this.#context, input);
  }

  async listErasableThreads(tenantId: string, options: CallOptions = {}): Promise<string[]> {
    options.signal?.throwIfAborted();
    return listErasableThreads(this.#context, tenantId);
  }

  async countExpired(layer: RetentionLayer, before: number, options: CallOptions = {}): Promise<number> {
    options.signal?.throwIfAborted();
    return countExpired(this.#context, layer, before);
  }

  async pruneExpired(input: PruneBatchInput, options: CallOptions = {}): Promise<number> {
    options.signal?.throwIfAborted();
    return pruneExpired(this.#context, input);
  }

  async appendTrace(trace: TraceRecord, options: CallOptions = {}): Promise<void> {
    options.signal?.throwIfAborted();
    await appendTrace(this.#context, trace);
  }

  async listTraces(tenantId: string, runId: string, options: CallOptions = {}): Promise<TraceRecord[]> {
    options.signal?.throwIfAborted();
    return listTraces(this.#context, tenantId, runId);
  }

  scanThreads(options: CallOptions = {}): AsyncIterable<ThreadSnapshot> {
    options.signal?.throwIfAborted();
    return scanThreads(this.#context);
  }

  async close(): Promise<void> {
    if (this.#isClosed) return;
    this.#isClosed = true;
    await this.#context.driver.close();
  }
}
