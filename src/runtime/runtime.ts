import {
  createId,
  hashJson,
  isId,
  isTerminalStatus,
  systemClock,
  TidemarkError,
  type Clock,
  type OperationRecord,
  type RecoveryPolicy,
  type RunEventDraft,
  type RunInput,
  type RunRecord,
  type ThreadRecord,
} from "../core/index.js";
import type { Store } from "../store/index.js";
import { EventHub } from "../stream/index.js";
import { runInBackground } from "./background.js";
import { abortableDelay, CancelScope } from "./cancel-scope.js";
import { titleFromText } from "./demo-model.js";
import { emitTerminal, executeRun, type ExecutionOutcome } from "./execute-run.js";
import { silentLogger, type Logger } from "./logger.js";
import type { ChatModel } from "./model.js";
import { DisconnectWatch } from "./disconnect-watch.js";
import { PendingCancels } from "./pending-cancels.js";
import { CancelRequestedError, conflictDetails } from "./run-errors.js";
import { recoverRun } from "./recover-run.js";
import type { Tool } from "../tools/tool.js";
import { traceFor, type RunExecution } from "./run-execution.js";

/** Hooks for metrics; all optional. */
export interface RuntimeObserver {
  /** A cancel was accepted by the store. */
  onCancelAccepted?(run: RunRecord): void;
  /** `run.cancelled` was emitted, `elapsedMs` after the cancel was accepted. */
  onCancelCompleted?(run: RunRecord, elapsedMs: number): void;
  onRunEnded?(run: RunRecord, outcome: ExecutionOutcome): void;
}

/** Options for {@link createRuntime}. */
export interface RuntimeOptions {
  store: Store;
  model: ChatModel;
  clock?: Clock;
  logger?: Logger;
  /** How long a run's event buffer is kept after its terminal event (default 15 minutes). */
  eventTtlMs?: number;
  /** How long a claimed run's lease lasts without a heartbeat (default 15 s). */
  leaseMs?: number;
  /** This process's lease owner name (default a fresh id). */
  workerId?: string;
  /** What recovery does with a run whose worker was lost, unless the run says (default `fail`). */
  recoveryPolicy?: RecoveryPolicy;
  /** With `on_disconnect: "cancel"`: how long a run may have no subscriber before it is cancelled (default 5 s). */
  disconnectGraceMs?: number;
  /** The tools the model may call. */
  tools?: readonly Tool[];
  observer?: RuntimeObserver;
}

/** A request to start a run. */
export interface StartRunRequest {
  tenantId: string;
  threadId: string;
  /** The user's new message; omit it only with `resumeFromCheckpointId` (continue: the stopped step runs again). */
  input?: RunInput;
  runId?: string;
  idempotencyKey?: string;
  expectedStateVersion?: number;
  onDisconnect?: "continue" | "cancel";
  recoveryPolicy?: RecoveryPolicy;
  /**
   * On a busy thread: `reject` (default), `interrupt` (cancel the active run, wait until it is
   * terminal, then start) or `enqueue` (start when the runs before it have ended, in order).
   */
  multitask?: "reject" | "interrupt" | "enqueue";
  /** Continue from this checkpoint; it must be the thread's head. */
  resumeFromCheckpointId?: string;
}

/** What a cancel did. */
export type CancelRunResult =
  | { kind: "accepted"; run: RunRecord; acceptedStateVersion: number; resumeCheckpointId: string }
  | { kind: "already_requested"; run: RunRecord }
  | { kind: "already_terminal"; run: RunRecord }
  /** A client-named run that does not exist yet: the cancel applies when it is created. */
  | { kind: "pending_creation"; runId: string };

/**
 * The embedded runtime: starts runs, executes them on this process with leases, cancels them,
 * and recovers runs whose lease expired. The server is a thin HTTP layer over it.
 */
export class Runtime {
  readonly hub: EventHub;
  readonly store: Store;
  readonly model: ChatModel;
  readonly workerId: string;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #leaseMs: number;
  readonly #recoveryPolicy: RecoveryPolicy;
  readonly #observer: RuntimeObserver;
  readonly #active = new Map<string, RunExecution>();
  readonly #executions = new Set<Promise<unknown>>();
  readonly #pendingCancels = new PendingCancels();
  readonly #disconnectWatch: DisconnectWatch;
  readonly #tools: ReadonlyMap<string, Tool>;
  /** Runs paused for an approval in this process, with the step waiting for the decision. */
  readonly #approvals = new Map<string, { opId: string; decide(decision: "approved" | "rejected"): void }>();
  #timers: NodeJS.Timeout[] = [];
  #isRecovering = false;
  #isClosed = false;

  constructor(options: RuntimeOptions) {
    this.store = options.store;
    this.model = options.model;
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? silentLogger;
    this.#leaseMs = options.leaseMs ?? 15_000;
    this.#recoveryPolicy = options.recoveryPolicy ?? "fail";
    this.#observer = options.observer ?? {};
    this.workerId = options.workerId ?? `wrk_${createId("run").slice(4)}`;
    this.hub = new EventHub({ ttlMs: options.eventTtlMs });
    this.#tools = new Map((options.tools ?? []).map((tool) => [tool.name, tool]));
    this.#disconnectWatch = new DisconnectWatch(options.disconnectGraceMs ?? 5_000, (tenantId, runId) =>
      runInBackground(this.#logger, "on_disconnect cancel", () => this.cancelRun(tenantId, runId, "client_disconnected")),
    );
  }

  /**
   * Tells the runtime a client subscribed to a run's events; call the returned function when it
   * disconnects. Runs created with `on_disconnect: "cancel"` are cancelled once nobody has
   * been subscribed for the grace period.
   */
  attachSubscriber(tenantId: string, runId: string): () => void {
    return this.#disconnectWatch.attach(tenantId, runId);
  }

  /** Runs being executed by this process. */
  get activeRunCount(): number {
    return this.#active.size;
  }

  /** Starts the lease heartbeat and the recovery sweep (and runs one sweep now). */
  async start(): Promise<void> {
    const heartbeat = setInterval(() => {
      runInBackground(this.#logger, "lease heartbeat", () =>
        this.store.renewLeases(this.workerId, this.#clock.now() + this.#leaseMs),
      );
    }, Math.max(50, this.#leaseMs / 3));
    const sweep = setInterval(() => runInBackground(this.#logger, "recovery", () => this.recover()), Math.max(50, this.#leaseMs / 2));
    heartbeat.unref();
    sweep.unref();
    this.#timers = [heartbeat, sweep];
    await this.recover();
  }

  /** Creates a thread with its root checkpoint. */
  async createThread(tenantId: string, metadata: Record<string, unknown> = {}): Promise<ThreadRecord> {
    return this.store.createThread({
      tenantId,
      threadId: createId("thr"),
      checkpointId: createId("cp"),
      metadata,
      now: this.#clock.now(),
    });
  }

  /** Starts a run (or returns the earlier one for a repeated run_id / Idempotency-Key). */
  async startRun(request: StartRunRequest): Promise<{ run: RunRecord; isNew: boolean }> {
    if (this.#isClosed) throw new TidemarkError("shutting_down", "The server is shutting down.");
    if (request.input === undefined && request.resumeFromCheckpointId === undefined) {
      throw new TidemarkError("invalid_request", "input is required, unless the run continues from resume_from_checkpoint_id.");
    }
    // A resume builds on exactly its checkpoint's version: the store's compare-and-set then
    // decides between two tabs, even if a client left expected_state_version out.
    const resumeVersion = request.resumeFromCheckpointId === undefined ? undefined : await this.#checkResumePoint(request);
    const effective = { ...request, expectedStateVersion: request.expectedStateVersion ?? resumeVersion };
    await this.#confirmUnknownOperations(request.tenantId, request.threadId);
    try {
      return await this.#createRun(effective);
    } catch (error) {
      if (request.multitask !== "interrupt" || !TidemarkError.isInstance(error) || error.code !== "run_in_progress") throw error;
      // interrupt: cancel the active run, wait until it has really stopped, then start on what it left.
      const activeRunId = error.details.active_run_id as string;
      const cancelled = await this.cancelRun(request.tenantId, activeRunId, "interrupted_by_new_run");
      const ended = await this.waitForTerminal(request.tenantId, activeRunId, 30_000);
      if (!ended || !isTerminalStatus(ended.status)) throw error;
      const builtOn = cancelled.kind === "accepted" ? cancelled.acceptedStateVersion : undefined;
      return this.#createRun({
        ...effective,
        // The version was current before the interrupt; the cancel it asked for moved it by one.
        expectedStateVersion: effective.expectedStateVersion === undefined ? undefined : (builtOn ?? effective.expectedStateVersion),
      });
    }
  }

  /**
   * What a client whose version is stale may do: reload, or branch from the point it built on
   * (not from the current head, which holds the other tab's story).
   */
  async #conflictActions(request: StartRunRequest, thread: ThreadRecord): Promise<string[]> {
    let builtOn = request.resumeFromCheckpointId;
    if (builtOn === undefined && request.expectedStateVersion !== undefined) {
      const checkpoints = await this.store.listCheckpoints(request.tenantId, request.threadId);
      builtOn = checkpoints.find((checkpoint) => checkpoint.stateVersion === request.expectedStateVersion)?.checkpointId;
    }
    return ["reload", `fork_from_${builtOn ?? thread.headCheckpointId}`];
  }

  /** A resume must build on the thread's head (an older checkpoint is stale: fork from it); returns its version. */
  async #checkResumePoint(request: StartRunRequest): Promise<number> {
    const thread = await this.store.getThread(request.tenantId, request.threadId);
    if (!thread) throw new TidemarkError("thread_not_found", "No such thread.");
    const checkpoints = await this.store.listCheckpoints(request.tenantId, request.threadId);
    const checkpoint = checkpoints.find((candidate) => candidate.checkpointId === request.resumeFromCheckpointId);
    if (!checkpoint) throw new TidemarkError("checkpoint_not_found", "No such checkpoint in this thread's lineage.");
    if (checkpoint.checkpointId !== thread.headCheckpointId) {
      throw new TidemarkError("state_version_conflict", "That checkpoint is not the thread's head any more.", {
        details: {
          ...conflictDetails(thread),
          allowed_actions: ["reload", `fork_from_${checkpoint.checkpointId}`],
        },
      });
    }
    return checkpoint.stateVersion;
  }

  async #createRun(request: StartRunRequest): Promise<{ run: RunRecord; isNew: boolean }> {
    const runId = request.runId ?? createId("run");
    const requestHash = hashJson({ thread_id: request.threadId, input: request.input ?? null, resume: request.resumeFromCheckpointId ?? null });
    const result = await this.store.createRun({
      tenantId: request.tenantId,
      runId,
      threadId: request.threadId,
      input: request.input ?? null,
      inputMessageId: createId("msg"),
      checkpointId: createId("cp"),
      idempotencyKey: request.idempotencyKey ?? null,
      requestHash,
      model: this.model.id,
      onDisconnect: request.onDisconnect ?? "continue",
      recoveryPolicy: request.recoveryPolicy ?? this.#recoveryPolicy,
      expectedStateVersion: request.expectedStateVersion ?? null,
      enqueue: request.multitask === "enqueue",
      now: this.#clock.now(),
    });
    switch (result.kind) {
      case "enqueued":
        this.#trace(result.run, "run_enqueued", { idempotency_key: result.run.idempotencyKey, behind: result.thread.activeRunId });
        this.hub.ensure(result.run.tenantId, result.run.runId, result.run.attempt);
        return { run: result.run, isNew: true };
      case "existing":
        return { run: result.run, isNew: false };
      case "key_reused":
        throw new TidemarkError("idempotency_key_reused", "This run id or Idempotency-Key was used for a different request.", {
          details: { run_id: result.run.runId },
        });
      case "thread_not_found":
        throw new TidemarkError("thread_not_found", "No such thread.");
      case "state_version_conflict":
        throw new TidemarkError("state_version_conflict", "The thread has moved on since the version you built on.", {
          details: { ...conflictDetails(result.thread), allowed_actions: await this.#conflictActions(request, result.thread) },
        });
      case "run_in_progress":
        throw new TidemarkError("run_in_progress", "The thread already has an active run.", {
          details: { active_run_id: result.thread.activeRunId, current_state_version: result.thread.stateVersion },
        });
      case "operation_unconfirmed":
        throw new TidemarkError("operation_unconfirmed", "An earlier action's outcome is unknown; confirm it before starting another run.", {
          details: {
            operations: result.operations.map((operation) => operation.opId),
            confirm_url: `/v1/threads/${request.threadId}/operations/${result.operations[0]?.opId}/confirm`,
          },
        });
      case "created":
        break;
    }
    const { run, thread } = result;
    this.#trace(run, "run_created", { idempotency_key: run.idempotencyKey, request_hash: requestHash, base_checkpoint_id: run.baseCheckpointId });
    if (thread.title === null && request.input) this.#saveTitle(thread, request.input.content);
    const pendingReason = this.#pendingCancels.take(run.tenantId, run.runId, this.#clock.now());
    if (pendingReason !== undefined) {
      await this.cancelRun(run.tenantId, run.runId, pendingReason);
      return { run: (await this.store.getRun(run.tenantId, run.runId))!, isNew: true };
    }
    if (run.onDisconnect === "cancel") this.#disconnectWatch.watch(run.tenantId, run.runId);
    // The buffer exists before the reply, so a client that subscribes at once waits for events.
    this.hub.ensure(run.tenantId, run.runId, run.attempt);
    this.#launch(run);
    return { run, isNew: true };
  }

  /** Accepts a cancel (STOP) for one run; never refused for a stale version. */
  async cancelRun(tenantId: string, runId: string, reason: string): Promise<CancelRunResult> {
    const key = runKey(tenantId, runId);
    const execution = this.#active.get(key);
    const pendingStep = execution?.activeStep ?? null;
    // Stop the work at once, then record the cancel. Nothing a client can see (the reply, the
    // events, the status) comes before the store accepted it, and the executor settles only
    // once it knows whether the store did (decision 005).
    let markRecorded: (isRecorded: boolean) => void = () => {};
    if (execution && execution.stopCause === null) {
      const recorded = new Promise<boolean>((resolve) => (markRecorded = resolve));
      execution.stopCause = { kind: "cancel", reason, recorded };
      execution.scope.cancel(new CancelRequestedError(reason));
      // One turn of the event loop lets the HTTP client close the provider's socket before the
      // commit; nothing can publish meanwhile (the work is aborted and waits for `recorded`).
      await new Promise(setImmediate);
    }
    let result: Awaited<ReturnType<Store["requestCancel"]>>;
    try {
      result = await this.store.requestCancel({
        tenantId,
        runId,
        reason,
        checkpointId: createId("cp"),
        pendingStep,
        now: this.#clock.now(),
      });
    } catch (error) {
      markRecorded(false);
      throw error;
    }
    markRecorded(result.kind === "accepted" || result.kind === "already_requested");
    if (result.kind === "not_found") {
      if (!isId(runId, "run")) throw new TidemarkError("run_not_found", "No such run.");
      this.#pendingCancels.remember(tenantId, runId, reason, this.#clock.now());
      return { kind: "pending_creation", runId };
    }
    if (result.kind !== "accepted") return result;
    const { run, thread, checkpoint } = result;
    const acceptedAt = run.cancelRequestedAt ?? this.#clock.now();
    this.#observer.onCancelAccepted?.(run);
    const emit = this.#emitter(run);
    emit({
      type: "run.cancel_requested",
      run_id: runId,
      reason,
      accepted_state_version: thread.stateVersion,
      resume_checkpoint_id: checkpoint.checkpointId,
    });
    emit({ type: "checkpoint.saved", run_id: runId, checkpoint_id: checkpoint.checkpointId, state_version: checkpoint.stateVersion, kind: checkpoint.kind });
    const operation = execution?.activeOperation;
    if (operation?.phase === "committing") {
      // The action is already with the external system: the run waits for its outcome, and says so.
      const cancelling = await this.store.transitionRun({
        tenantId,
        runId,
        from: ["cancel_requested"],
        to: "cancelling",
        activeOperation: operation.opId,
        now: this.#clock.now(),
      });
      if (cancelling) emit({ type: "run.cancelling", run_id: runId, active_operation: `${operation.toolName} (${operation.opId})` });
    }
    if (isTerminalStatus(run.status)) {
      // It never started: nothing to wait for.
      emitTerminal({ emit }, run, 0);
      this.#observer.onCancelCompleted?.(run, this.#clock.now() - acceptedAt);
      if (!execution) await this.#admitNext(tenantId, run.threadId);
    }
    this.#trace(run, "cancel_accepted", { reason, accepted_at: acceptedAt, accepted_state_version: thread.stateVersion });
    return { kind: "accepted", run, acceptedStateVersion: thread.stateVersion, resumeCheckpointId: checkpoint.checkpointId };
  }

  /** The run once it is terminal, or as it stands when `timeoutMs` ran out; undefined if unknown. */
  async waitForTerminal(tenantId: string, runId: string, timeoutMs: number): Promise<RunRecord | undefined> {
    const deadline = this.#clock.now() + timeoutMs;
    let run = await this.store.getRun(tenantId, runId);
    while (run && !isTerminalStatus(run.status)) {
      const remaining = deadline - this.#clock.now();
      if (remaining <= 0) break;
      const buffer = this.hub.get(tenantId, runId);
      const waiter = new AbortController();
      const waits: Promise<unknown>[] = [abortableDelay(buffer ? remaining : Math.min(remaining, 50), waiter.signal)];
      if (buffer) waits.push(buffer.whenTerminal());
      await Promise.race(waits).finally(() => waiter.abort());
      run = await this.store.getRun(tenantId, runId);
    }
    return run;
  }

  /** TERMINATE: cancels every run of the thread and deletes it; undefined if not found. */
  async terminateThread(tenantId: string, threadId: string): Promise<{ cancelledRunIds: string[] } | undefined> {
    const thread = await this.store.getThread(tenantId, threadId);
    if (!thread) return undefined;
    const cancelledRunIds: string[] = [];
    for (const run of await this.store.listActiveRuns(tenantId, threadId)) {
      const result = await this.cancelRun(tenantId, run.runId, "thread_terminated");
      if (result.kind === "accepted" || result.kind === "already_requested") cancelledRunIds.push(run.runId);
    }
    await this.store.deleteThread(tenantId, threadId, this.#clock.now());
    return { cancelledRunIds };
  }

  /**
   * Recovers runs whose lease expired (their process died): by policy they fail with
   * `worker_lost` or resume from the last checkpoint; a run whose cancel was accepted is
   * cancelled, since its work stopped with its worker. Returns how many were recovered.
   */
  async recover(): Promise<number> {
    if (this.#isRecovering || this.#isClosed) return 0;
    this.#isRecovering = true;
    try {
      const now = this.#clock.now();
      const runs = await this.store.listRecoverableRuns(now, now - this.#leaseMs);
      let recovered = 0;
      for (const run of runs) {
        if (this.#active.has(runKey(run.tenantId, run.runId))) continue;
        const recoveredRun = await recoverRun(run, {
          store: this.store,
          now: this.#clock.now(),
          launch: (queued) => this.#launch(queued),
          trace: (traced, kind, data) => this.#trace(traced, kind, data),
          emitter: (ended) => this.#emitter(ended),
        });
        if (recoveredRun) recovered++;
      }
      for (const { tenantId, threadId } of await this.store.listThreadsWithWaitingRuns()) await this.#admitNext(tenantId, threadId);
      return recovered;
    } finally {
      this.#isRecovering = false;
    }
  }

  /** APPROVE / REJECT the consequential operation a run is paused for. */
  async decide(tenantId: string, runId: string, decision: "approved" | "rejected"): Promise<RunRecord> {
    const run = await this.store.getRun(tenantId, runId);
    if (!run) throw new TidemarkError("run_not_found", "No such run.");
    const waiter = this.#approvals.get(runKey(tenantId, runId));
    if (!waiter || run.status !== "interrupted") {
      throw new TidemarkError("run_not_interrupted", "The run is not waiting for an approval.", { details: { status: run.status } });
    }
    const resumed = await this.store.transitionRun({ tenantId, runId, from: ["interrupted"], to: "running", now: this.#clock.now() });
    if (!resumed) {
      const current = await this.store.getRun(tenantId, runId);
      throw new TidemarkError("run_not_interrupted", "The run is not waiting for an approval.", { details: { status: current?.status } });
    }
    this.#emitter(resumed)({ type: "run.resumed", run_id: runId, op_id: waiter.opId, decision });
    this.#trace(resumed, decision === "approved" ? "operation_approved" : "operation_rejected", { op_id: waiter.opId });
    waiter.decide(decision);
    return resumed;
  }

  /** The user's confirmation of an operation whose outcome was unknown (a transition of its thread). */
  async confirmOperation(tenantId: string, threadId: string, opId: string, outcome: "committed" | "not_committed", result?: unknown) {
    const operation = await this.store.getOperation(tenantId, opId);
    if (!operation || operation.threadId !== threadId) throw new TidemarkError("operation_not_found", "No such operation on this thread.");
    if (operation.phase !== "outcome_unknown") {
      throw new TidemarkError("operation_not_confirmable", "Only an operation whose outcome is unknown can be confirmed.", {
        details: { phase: operation.phase },
      });
    }
    const confirmed = await this.store.confirmOperation({ tenantId, threadId, opId, outcome, result, checkpointId: createId("cp"), now: this.#clock.now() });
    if (!confirmed) throw new TidemarkError("operation_not_confirmable", "The operation was confirmed meanwhile.");
    return confirmed;
  }

  /** Asks each tool with a `status` hook what happened to its operations of unknown outcome. */
  async #confirmUnknownOperations(tenantId: string, threadId: string): Promise<void> {
    const unknown = (await this.store.listOperations(tenantId, threadId)).filter((operation) => operation.phase === "outcome_unknown");
    for (const operation of unknown) {
      const tool = this.#tools.get(operation.toolName);
      if (tool?.effect !== "consequential" || !tool.status) continue;
      const status = await tool
        .status(operation.idempotencyKey, { tenantId, threadId, signal: AbortSignal.timeout(10_000) })
        .catch(() => ({ outcome: "unknown" as const }));
      if (status.outcome === "unknown") continue;
      await this.store.confirmOperation({
        tenantId,
        threadId,
        opId: operation.opId,
        outcome: status.outcome,
        result: status.outcome === "committed" ? status.result : undefined,
        checkpointId: createId("cp"),
        now: this.#clock.now(),
      });
      this.#logger.info({ op_id: operation.opId, outcome: status.outcome }, "operation confirmed by its tool's status hook");
    }
  }

  /** Pauses a run (`interrupted`) for an approval; resolves with the decision, rejects on Stop. */
  async #awaitApproval(execution: RunExecution, operation: OperationRecord, signal: AbortSignal): Promise<"approved" | "rejected"> {
    const { run } = execution;
    const key = runKey(run.tenantId, run.runId);
    const paused = await this.store.transitionRun({
      tenantId: run.tenantId,
      runId: run.runId,
      from: ["running"],
      to: "interrupted",
      activeOperation: operation.opId,
      now: this.#clock.now(),
    });
    signal.throwIfAborted();
    if (!paused) throw new Error("the run could not pause for approval");
    execution.emit({
      type: "run.interrupted",
      run_id: run.runId,
      op_id: operation.opId,
      tool: operation.toolName,
      idempotency_key: operation.idempotencyKey,
      preview: operation.preview,
    });
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#approvals.delete(key);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#approvals.set(key, {
        opId: operation.opId,
        decide: (decision) => {
          signal.removeEventListener("abort", onAbort);
          this.#approvals.delete(key);
          resolve(decision);
        },
      });
    });
  }

  /** Starts the oldest run waiting on a thread once the thread is free (multitask `enqueue`). */
  async #admitNext(tenantId: string, threadId: string): Promise<void> {
    const run = await this.store.admitNextRun(tenantId, threadId, createId("cp"), this.#clock.now());
    if (!run) return;
    this.#trace(run, "run_admitted", { base_checkpoint_id: run.baseCheckpointId });
    if (run.onDisconnect === "cancel") this.#disconnectWatch.watch(run.tenantId, run.runId);
    this.#launch(run);
  }

  /** Claims a queued run for this process and executes it in the background. */
  #launch(run: RunRecord): void {
    const key = runKey(run.tenantId, run.runId);
    const scope = CancelScope.root();
    const emit = this.#emitter(run);
    const execution: RunExecution = {
      run,
      store: this.store,
      model: this.model,
      clock: this.#clock,
      logger: this.#logger,
      scope,
      emit,
      trace: (kind, data) => this.#trace(run, kind, data),
      requestCancel: async (reason) => {
        await this.cancelRun(run.tenantId, run.runId, reason);
      },
      activeStep: null,
      tools: this.#tools,
      activeOperation: null,
      awaitApproval: (operation, signal) => this.#awaitApproval(execution, operation, signal),
      stopCause: null,
      discarded: { llmCalls: 0, streamChars: 0, outputTokens: 0, inputTokens: 0, isEstimated: true },
    };
    // Registered before the claim, so a cancel that lands while claiming still aborts it.
    this.#active.set(key, execution);
    let isSettled = false;
    const task = (async () => {
      try {
        const claimed = await this.store.claimRun({
          tenantId: run.tenantId,
          runId: run.runId,
          owner: this.workerId,
          leaseExpiresAt: this.#clock.now() + this.#leaseMs,
          now: this.#clock.now(),
        });
        if (!claimed) return;
        emit({ type: "run.started", run_id: run.runId, thread_id: run.threadId, attempt: claimed.attempt, status: claimed.status });
        execution.run = claimed;
        const outcome = await executeRun(execution);
        isSettled = true;
        this.#finished(execution, claimed, outcome);
      } catch (error) {
        // The executor could not settle the run (e.g. the store failed): stop renewing its lease
        // so recovery applies the run's policy instead of leaving it running forever.
        if (!isSettled) await this.store.releaseLease(run.tenantId, run.runId, this.workerId).catch(() => undefined);
        throw error;
      } finally {
        this.#active.delete(key);
        this.#disconnectWatch.forget(run.tenantId, run.runId);
        scope.dispose();
        if (!this.#isClosed) runInBackground(this.#logger, "admit next run", () => this.#admitNext(run.tenantId, run.threadId));
      }
    })();
    this.#executions.add(task);
    runInBackground(this.#logger, `run ${run.runId}`, () => task.finally(() => this.#executions.delete(task)));
  }

  #finished(execution: RunExecution, run: RunRecord, outcome: ExecutionOutcome): void {
    if (outcome === "cancelled" && execution.stopCause?.kind === "cancel") {
      const endedAt = this.#clock.now();
      runInBackground(this.#logger, "cancel latency", async () => {
        const final = await this.store.getRun(run.tenantId, run.runId);
        if (final?.cancelRequestedAt != null) this.#observer.onCancelCompleted?.(final, endedAt - final.cancelRequestedAt);
      });
    }
    this.#observer.onRunEnded?.(run, outcome);
  }

  /** Appends to the run's buffer; the first event of every attempt is `run.started`. */
  #emitter(run: RunRecord): (draft: RunEventDraft) => void {
    // Resolved once: this closure sits on the per-token path.
    const buffer = this.hub.ensure(run.tenantId, run.runId, run.attempt);
    return (draft) => {
      if (buffer.terminalEvent) return;
      if (buffer.isEmpty && draft.type !== "run.started") {
        buffer.append({ type: "run.started", run_id: run.runId, thread_id: run.threadId, attempt: run.attempt, status: run.status });
      }
      buffer.append(draft);
    };
  }

  #saveTitle(thread: ThreadRecord, firstMessage: string): void {
    // Its own transaction, whatever the run's fate or the client's.
    runInBackground(this.#logger, "title", async () => {
      // The model's title when it gives one in time; else the heuristic, so a thread is always named.
      const fromModel = await this.model.title?.(firstMessage, { signal: AbortSignal.timeout(10_000) }).catch((error: unknown) => {
        this.#logger.warn({ error: String(error) }, "the model gave no title; using the first words");
        return undefined;
      });
      const title = fromModel?.trim() || titleFromText(firstMessage);
      await this.store.saveTitle(thread.tenantId, thread.threadId, title.slice(0, 200), this.#clock.now());
    });
  }

  #trace(run: RunRecord, kind: string, data: Record<string, unknown>): void {
    const record = traceFor(run, createId("trc"), kind, data, this.#clock.now());
    runInBackground(this.#logger, "trace", () => this.store.appendTrace(record));
  }

  /**
   * Stops the sweeps and hands every run this process is executing back to the queue at its
   * next safe point (a purposeful stop is not a failure), then waits for them to settle.
   */
  async close(): Promise<void> {
    this.#isClosed = true;
    for (const timer of this.#timers) clearInterval(timer);
    for (const execution of this.#active.values()) {
      execution.stopCause ??= { kind: "shutdown" };
      execution.scope.cancel(new Error("shutdown"));
    }
    await Promise.allSettled([...this.#executions]);
    this.#disconnectWatch.clear();
    this.hub.clear();
  }
}

function runKey(tenantId: string, runId: string): string {
  return `${tenantId}\u0000${runId}`;
}

/** Creates the embedded runtime. */
export function createRuntime(options: RuntimeOptions): Runtime {
  return new Runtime(options);
}
