import { DEFAULT_RUN_LIMITS, type RunLimits } from "./run-limits.js";
import { StreamSlots } from "./stream-slots.js";
import {
  ConfigurationError,
  createId,
  defaultRedactor,
  redactLogger,
  systemClock,
  systemTimers,
  type Clock,
  type Redactor,
  type RetentionSettings,
  type TimerHandle,
  type Timers,
  type RecoveryPolicy,
  type RunRecord,
  type ThreadRecord,
} from "../core/index.js";
import { runKey } from "./run-key.js";
import type { LiveOutput } from "./live-output.js";
import type { Cluster } from "./cluster.js";
import type { DeleteMessageResult, EraseThreadResult, ForkThreadResult, Store } from "../store/index.js";
import { EventHub, type RunEventBuffer } from "../stream/index.js";
import type { Tool } from "../tools/tool.js";
import { z } from "zod";
import { AgentRegistry } from "../agents/agent-registry.js";
import { withBuiltInAgents } from "../agents/built-in-agents.js";
import type { Agent } from "../agents/define-agent.js";
import { Approvals } from "./approvals.js";
import { runInBackground } from "./background.js";
import { cancelRun, recordStopAtRequest, stopAtRequest, terminateThread, type CancelRunContext, type CancelRunResult } from "./cancel-run.js";
import { DEFAULT_SHIELD_TIMEOUT_MS } from "./cancel-scope.js";
import { ClusterWorker } from "./cluster-worker.js";
import { forwardDecision } from "./forward-decision.js";
import { LeaseKeeper } from "./lease-keeper.js";
import { DisconnectWatch } from "./disconnect-watch.js";
import { silentLogger, type Logger } from "../core/logger.js";
import type { ChatModel } from "../core/model.js";
import { confirmOperation, confirmUnknownOperations, type OperationConfirmationContext } from "./operation-confirmation.js";
import { PendingCancels } from "./pending-cancels.js";
import { recoverRun } from "./recover-run.js";
import type { RuntimeObserver } from "./runtime-observer.js";
import { RunJournal } from "./run-journal.js";
import { RunScheduler } from "./run-scheduler.js";
import { RetentionPruner, type PruneCounts } from "./retention-pruner.js";
import { saveTitle } from "./save-title.js";
import { startRun, startRunInNewThread, type NewThreadOptions, type NewThreadRunRequest, type StartRunContext, type StartRunRequest } from "./start-run.js";
import { rollBackRun, type RollbackOutcome, type RollbackRequest } from "./roll-back-run.js";
import { deleteMessage, forkThread, saveFragment, type ForkRequest, type SaveFragmentOutcome, type SaveFragmentRequest, type ThreadEditsContext } from "./thread-edits.js";

export type { RuntimeObserver } from "./runtime-observer.js";
export type { NewThreadOptions, NewThreadRunRequest, StartRunRequest } from "./start-run.js";
export type { CancelRunResult } from "./cancel-run.js";
export type { ForkRequest, SaveFragmentOutcome, SaveFragmentRequest } from "./thread-edits.js";

/** What a process does: `api` serves requests and leaves execution to workers; `worker` executes; `all` both. */
export type RuntimeRole = "api" | "worker" | "all";

/** Options for {@link createRuntime}. */
export interface RuntimeOptions {
  store: Store;
  model: ChatModel;
  clock?: Clock;
  /** The timers of the event TTL, disconnect grace, lease heartbeat and recovery sweep (default the process's). */
  timers?: Timers;
  logger?: Logger;
  /**
   * What everything leaving the confirmed state passes through: trace entries, log lines,
   * OpenTelemetry attributes and operation previews (docs/data/redaction.md). Default
   * {@link defaultRedactor} (emails and card numbers masked); `noRedaction` turns it off.
   */
  redactor?: Redactor;
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
  /**
   * The agents runs may name (DESIGN §11), besides the built-in `chat` (the default) and
   * `research`; one with a built-in's name replaces it.
   */
  agents?: readonly Agent[];
  observer?: RuntimeObserver;
  /** What this process does (default `all`). `api` and `worker` need a cluster. */
  role?: RuntimeRole;
  /** The other processes on the same database (PostgreSQL); none for the embedded default. */
  cluster?: Cluster;
  /** A worker executes at most this many runs at once (default 64). */
  maxConcurrentRuns?: number;
  /** How often a worker looks for queued runs and accepted cancels without a notification (default 1000 ms). */
  pollMs?: number;
  /**
   * How long non-cancellable work (a tool's commit already handed over) may go on after a Stop or
   * a shutdown before the run stops waiting and records it `outcome_unknown` (default 30 s). It
   * also bounds `close()`.
   */
  shieldTimeoutMs?: number;
  /** What one tenant may hold at once (runs, input length, event streams); defaults in {@link DEFAULT_RUN_LIMITS}. */
  limits?: Partial<RunLimits>;
  /**
   * How long each layer is kept (docs/data/lifetimes.md); defaults in {@link DEFAULT_RETENTION}.
   * A process that executes runs prunes what expired every `pruneIntervalMs` (default 10 minutes).
   */
  retention?: Partial<RetentionSettings>;
  pruneIntervalMs?: number;
}

/**
 * The embedded runtime: starts runs, executes them on this process with leases, cancels them,
 * and recovers runs whose lease expired. The server is a thin HTTP layer over it.
 *
 * A facade: its parts (the journal of events and traces, the scheduler of executing runs, the
 * start, cancel, approval, confirmation, edit and recovery paths) each get the narrow ports they
 * need, wired once here; no part calls back into this class.
 */
export class Runtime {
  readonly hub: EventHub;
  readonly store: Store;
  readonly model: ChatModel;
  readonly workerId: string;
  /** The deployed agents. */
  readonly agents: AgentRegistry;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #redactor: Redactor;
  readonly #streamSlots: StreamSlots;
  readonly #observer: RuntimeObserver;
  readonly #leaseMs: number;
  readonly #role: RuntimeRole;
  readonly #cluster: Cluster | undefined;
  readonly #disconnectWatch: DisconnectWatch;
  readonly #journal: RunJournal;
  readonly #scheduler: RunScheduler;
  readonly #approvals: Approvals;
  readonly #worker: ClusterWorker | undefined;
  readonly #leases: LeaseKeeper;
  readonly #start: StartRunContext;
  readonly #cancel: CancelRunContext;
  readonly #confirmations: OperationConfirmationContext;
  readonly #edits: ThreadEditsContext;
  readonly #timerSource: Timers;
  readonly #liveOutputs = new Map<string, LiveOutput>();
  /** Expires each layer past its retention; absent in an API-only process (the workers prune). */
  readonly #pruner: RetentionPruner | undefined;
  #timers: TimerHandle[] = [];
  #isRecovering = false;

  constructor(options: RuntimeOptions) {
    const store = (this.store = options.store);
    const model = (this.model = options.model);
    const clock = (this.#clock = options.clock ?? systemClock);
    const timers = (this.#timerSource = options.timers ?? systemTimers);
    const redactor = (this.#redactor = options.redactor ?? defaultRedactor);
    // Every line this runtime (and each part it wires) logs is redacted here, once.
    const logger = (this.#logger = redactLogger(options.logger ?? silentLogger, redactor));
    const leaseMs = (this.#leaseMs = options.leaseMs ?? 15_000);
    const observer = (this.#observer = options.observer ?? {});
    this.workerId = options.workerId ?? `wrk_${createId("run").slice(4)}`;
    const hub = (this.hub = new EventHub({ ttlMs: options.eventTtlMs, timers }));
    const limits: RunLimits = { ...DEFAULT_RUN_LIMITS, ...options.limits };
    this.#streamSlots = new StreamSlots(limits);
    this.#role = options.role ?? "all";
    const cluster = (this.#cluster = options.cluster);
    if (this.#role !== "all" && !cluster) throw new ConfigurationError(`The ${this.#role} role needs a cluster (PostgreSQL).`, { setting: "role" });
    const tools = new Map((options.tools ?? []).map((tool) => [tool.name, tool]));
    const toolDefinitions = [...tools.values()].map((tool) => ({
      name: tool.name,
      description: tool.description,
      inputSchema: z.toJSONSchema(tool.input) as Record<string, unknown>,
    }));
    const agents = (this.agents = new AgentRegistry(withBuiltInAgents(options.agents)));
    const pendingCancels = new PendingCancels();
    const cancel = (tenantId: string, runId: string, reason: string): Promise<CancelRunResult> => cancelRun(this.#cancel, tenantId, runId, reason);

    const journal: RunJournal = (this.#journal = new RunJournal({
      hub,
      store,
      clock,
      logger,
      redactor,
      cluster,
      executesHere: (tenantId, runId): boolean => scheduler.execution(tenantId, runId) !== undefined,
    }));
    const emitter = (run: RunRecord) => journal.emitter(run);
    const trace = (run: RunRecord, kind: string, data: Record<string, unknown>) => journal.trace(run, kind, data);
    const disconnectWatch = (this.#disconnectWatch = new DisconnectWatch(options.disconnectGraceMs ?? 5_000, (tenantId, runId) =>
      runInBackground(logger, "on_disconnect cancel", () => cancel(tenantId, runId, "client_disconnected"), { run_id: runId, tenant_id: tenantId }),
      timers,
    ));
    const approvals = (this.#approvals = new Approvals({ store, clock, emitter, trace }));
    const scheduler: RunScheduler = (this.#scheduler = new RunScheduler({
      store,
      model,
      clock,
      logger,
      redactor,
      journal,
      tools,
      toolDefinitions,
      agents,
      observer,
      disconnectWatch,
      leaseMs,
      shieldTimeoutMs: options.shieldTimeoutMs ?? DEFAULT_SHIELD_TIMEOUT_MS,
      workerId: this.workerId,
      executes: this.#role !== "api",
      cluster,
      cancel,
      awaitApproval: (execution, operation, signal) => approvals.awaitApproval(execution, operation, signal),
      // A slot is free again: a worker claims the next queued run.
      onRunSettled: () => this.#worker?.claimSoon(),
      liveOutputs: this.#liveOutputs,
    }));
    this.#leases = new LeaseKeeper({ store, clock, timers, logger, workerId: this.workerId, leaseMs, active: scheduler.active, trace, onLeaseLost: (run) => observer.onLeaseLost?.(run) });
    this.#confirmations = { store, clock, logger, tools };
    this.#cancel = {
      store,
      clock,
      observer,
      logger,
      redactor,
      active: scheduler.active,
      pendingCancels,
      cluster,
      emitter,
      trace,
      admitNext: (tenantId, threadId) => scheduler.admitNext(tenantId, threadId),
    };
    this.#start = {
      store,
      model,
      agents,
      clock,
      hub,
      recoveryPolicy: options.recoveryPolicy ?? "fail",
      limits,
      pendingCancels,
      disconnectWatch,
      isClosed: () => scheduler.isClosed,
      trace,
      saveTitle: (thread, firstMessage) => saveTitle({ store, model, clock, logger }, thread, firstMessage),
      launch: (run, traceContext) => scheduler.launch(run, traceContext),
      cancelRun: cancel,
      waitForTerminal: (tenantId, runId, timeoutMs) => journal.waitForTerminal(tenantId, runId, timeoutMs),
      confirmUnknownOperations: (tenantId, threadId) => confirmUnknownOperations(this.#confirmations, tenantId, threadId),
    };
    this.#edits = { store, clock, openEvents: (tenantId, run, afterSeq) => journal.openEvents(tenantId, run, afterSeq) };
    this.#pruner =
      this.#role === "api"
        ? undefined
        : new RetentionPruner({ store, clock, timers, logger, settings: options.retention, intervalMs: options.pruneIntervalMs });
    this.#worker =
      cluster && this.#role !== "api"
        ? new ClusterWorker({
            cluster,
            store,
            clock,
            timers,
            logger,
            workerId: this.workerId,
            leaseMs,
            maxConcurrentRuns: options.maxConcurrentRuns ?? 64,
            pollMs: options.pollMs ?? 1_000,
            eventTtlMs: options.eventTtlMs ?? 15 * 60_000,
            active: scheduler.active,
            approvals,
            execute: (run) => scheduler.executeClaimed(run),
            isClosed: () => scheduler.isClosed,
          })
        : undefined;
  }

  /**
   * Plays the answers of run `runId` (not created yet) to a live user: they are published once
   * heard, and a cancel publishes the heard part (DESIGN §12). Only where runs execute in this
   * process (not an API-only process). Returns the function that detaches it.
   */
  attachLiveOutput(tenantId: string, runId: string, output: LiveOutput): () => void {
    if (this.#role === "api") throw new ConfigurationError("Live turns run where they are played: an API-only process executes no runs.", { setting: "role" });
    const key = runKey(tenantId, runId);
    this.#liveOutputs.set(key, output);
    return () => {
      if (this.#liveOutputs.get(key) === output) this.#liveOutputs.delete(key);
    };
  }

  /**
   * Tells the runtime a client subscribed to a run's events; call the returned function when it
   * disconnects. Runs created with `on_disconnect: "cancel"` are cancelled once nobody has
   * been subscribed for the grace period.
   */
  attachSubscriber(tenantId: string, runId: string): () => void {
    const releaseSlot = this.#streamSlots.take(tenantId, runId);
    const detach = this.#disconnectWatch.attach(tenantId, runId);
    return () => {
      detach();
      releaseSlot();
    };
  }

  /** Prunes what expired now (as the background pruner does); undefined in an API-only process. */
  pruneExpired(): Promise<PruneCounts> | undefined {
    return this.#pruner?.pruneOnce();
  }

  /** Runs being executed by this process. */
  get activeRunCount(): number {
    return this.#scheduler.active.size;
  }

  /** What everything leaving the confirmed state passes through (the server's log lines too). */
  get redactor(): Redactor {
    return this.#redactor;
  }

  /** What this process does. */
  get role(): RuntimeRole {
    return this.#role;
  }

  /**
   * Starts the lease heartbeat (which stops the runs whose lease it could not renew in time,
   * decision 014) and the recovery sweep (and runs one sweep now); with a cluster, a worker also
   * claims queued runs (woken by NOTIFY, polled as the fallback) and listens for the cancels and
   * approvals other processes accepted. An API process executes nothing.
   */
  async start(): Promise<void> {
    if (this.#role === "api") return;
    this.#leases.start();
    const sweep = this.#timerSource.setInterval(() => runInBackground(this.#logger, "recovery", () => this.recover()), Math.max(50, this.#leaseMs / 2));
    this.#timers = [sweep];
    if (this.#worker) this.#timers.push(...this.#worker.start());
    this.#pruner?.start();
    await this.recover();
    this.#worker?.claimSoon();
  }

  /**
   * The buffer to stream a run's events from: this process's own when it executes the run, else
   * (scaled) the shared log's, followed live. Undefined when the stream is gone.
   */
  openEvents(tenantId: string, run: RunRecord, afterSeq: number): Promise<RunEventBuffer | undefined> {
    return this.#journal.openEvents(tenantId, run, afterSeq);
  }

  /** Creates a thread with its root checkpoint; a `title` given here is never replaced by the automatic one. */
  async createThread(tenantId: string, options: { metadata?: Record<string, unknown>; title?: string } = {}): Promise<ThreadRecord> {
    return this.store.createThread({
      tenantId,
      threadId: createId("thr"),
      checkpointId: createId("cp"),
      metadata: options.metadata ?? {},
      title: options.title ?? null,
      now: this.#clock.now(),
    });
  }

  /** Sets the title the user chose; undefined when the thread is unknown, foreign or deleted. */
  renameThread(tenantId: string, threadId: string, title: string): Promise<ThreadRecord | undefined> {
    return this.store.renameThread(tenantId, threadId, title, this.#clock.now());
  }

  /** Starts a run (or returns the earlier one for a repeated run_id / Idempotency-Key). */
  startRun(request: StartRunRequest): Promise<{ run: RunRecord; isNew: boolean }> {
    return startRun(this.#start, request);
  }

  /** Starts a run in a thread created with it, in one transaction (a repeat returns the first run and creates nothing). */
  startRunInNewThread(request: NewThreadRunRequest, thread?: NewThreadOptions): Promise<{ run: RunRecord; isNew: boolean }> {
    return startRunInNewThread(this.#start, request, thread);
  }

  /** Accepts a cancel (STOP) for one run; never refused for a stale version. */
  cancelRun(tenantId: string, runId: string, reason: string): Promise<CancelRunResult> {
    return cancelRun(this.#cancel, tenantId, runId, reason);
  }

  /**
   * Stops the work of a run executing here as soon as its cancel request is known, before the
   * request is read further; true when it did. `recordStopAtRequest` must follow, once the request ended.
   */
  stopAtRequest(tenantId: string, runId: string): boolean {
    return stopAtRequest(this.#cancel, tenantId, runId);
  }

  /** Records a Stop `stopAtRequest` began, unless its request's `cancelRun` already did. */
  recordStopAtRequest(tenantId: string, runId: string): Promise<void> {
    return recordStopAtRequest(this.#cancel, tenantId, runId);
  }

  /** The run once it is terminal, or as it stands when `timeoutMs` ran out; undefined if unknown. */
  waitForTerminal(tenantId: string, runId: string, timeoutMs: number): Promise<RunRecord | undefined> {
    return this.#journal.waitForTerminal(tenantId, runId, timeoutMs);
  }

  /** TERMINATE: deletes the thread and cancels every run of it, atomically; undefined if not found. */
  terminateThread(tenantId: string, threadId: string): Promise<{ cancelledRunIds: string[] } | undefined> {
    return terminateThread(this.#cancel, tenantId, threadId);
  }

  /**
   * Erases a thread (docs/data/lifetimes.md): its text leaves the store in one transaction, and
   * this process's event buffers of its runs go with it. A second erase answers `already_erased`.
   */
  async eraseThread(tenantId: string, threadId: string): Promise<EraseThreadResult> {
    const result = await this.store.eraseThread({ tenantId, threadId, checkpointId: createId("cp"), now: this.#clock.now() });
    if (result.kind === "erased") for (const runId of result.runIds) this.hub.drop(tenantId, runId);
    return result;
  }

  /**
   * Rollback: Stops the run (waiting up to `waitMs` until it is terminal), then takes its input
   * back as a new version; refusals throw (`run_not_rollbackable`, `rollback_conflict`).
   */
  rollBackRun(request: RollbackRequest): Promise<RollbackOutcome> {
    return rollBackRun(this.#start, request);
  }

  /** Saves what the client saw of a stopped answer (at `lastSeq`) as a fragment. */
  saveFragment(request: SaveFragmentRequest): Promise<SaveFragmentOutcome> {
    return saveFragment(this.#edits, request);
  }

  /** Deletes a saved fragment. */
  deleteMessage(tenantId: string, threadId: string, messageId: string): Promise<DeleteMessageResult> {
    return deleteMessage(this.#edits, tenantId, threadId, messageId);
  }

  /** Starts a branch from a checkpoint of the thread's lineage. */
  forkThread(request: ForkRequest): Promise<ForkThreadResult> {
    return forkThread(this.#edits, request);
  }

  /**
   * Recovers runs whose lease expired (their process died): by policy they fail with
   * `worker_lost` or resume from the last checkpoint; a run whose cancel was accepted is
   * cancelled, since its work stopped with its worker. Returns how many were recovered.
   */
  async recover(): Promise<number> {
    if (this.#isRecovering || this.#scheduler.isClosed || this.#role === "api") return 0;
    this.#isRecovering = true;
    try {
      const now = this.#clock.now();
      const runs = await this.store.listRecoverableRuns(now, now - this.#leaseMs);
      const journal = this.#journal;
      const scheduler = this.#scheduler;
      let recovered = 0;
      for (const run of runs) {
        // A run executing here is not lost; one this process let go of (fenced) is, even if its
        // execution is still winding down: that execution writes nothing more.
        const execution = scheduler.execution(run.tenantId, run.runId);
        if (execution && execution.stop.state.kind !== "fenced") continue;
        const recoveredRun = await recoverRun(run, {
          store: this.store,
          now: this.#clock.now(),
          owner: this.workerId,
          leaseMs: this.#leaseMs,
          logger: this.#logger,
          redactor: this.#redactor,
          launch: (queued) => scheduler.launch(queued),
          trace: (traced, kind, data) => journal.trace(traced, kind, data),
          emitter: (ended) => journal.continuingEmitter(ended),
        });
        if (recoveredRun) {
          recovered++;
          this.#observer.onRunRecovered?.(run);
        }
      }
      for (const { tenantId, threadId } of await this.store.listThreadsWithWaitingRuns()) await scheduler.admitNext(tenantId, threadId);
      return recovered;
    } finally {
      this.#isRecovering = false;
    }
  }

  /**
   * APPROVE / REJECT the consequential operation a run is paused for. Scaled, the decision goes to
   * the worker holding the run, and the answer is the status it moved the run to.
   */
  async decide(tenantId: string, runId: string, decision: "approved" | "rejected"): Promise<RunRecord> {
    if (!this.#cluster || this.#approvals.isWaiting(tenantId, runId)) return this.#approvals.decide(tenantId, runId, decision);
    return forwardDecision({ store: this.store, clock: this.#clock, cluster: this.#cluster }, tenantId, runId, decision);
  }

  /** The user's confirmation of an operation whose outcome was unknown (a transition of its thread). */
  confirmOperation(tenantId: string, threadId: string, opId: string, outcome: "committed" | "not_committed", result?: unknown) {
    return confirmOperation(this.#confirmations, tenantId, threadId, opId, outcome, result);
  }

  /**
   * Drains: stops claiming and sweeping, and hands every run this process is executing back to
   * the queue at its next safe point (`worker_draining`: a purposeful stop is not a failure),
   * then waits for them to settle, for a bounded time (`RunScheduler.drain`), so it always returns.
   */
  async close(): Promise<void> {
    for (const timer of this.#timers) this.#timerSource.clear(timer);
    // A prune under way ends after its current batch.
    await this.#pruner?.stop();
    // The leases are renewed while the runs drain, and let go of if they cannot be.
    const wasExecuting = await this.#scheduler.drain().finally(() => this.#leases.stop());
    // The runs handed back are queued again: the other workers take them now, not at their next poll.
    if (wasExecuting) this.#cluster?.announceQueued();
    this.#disconnectWatch.clear();
    this.hub.clear();
  }
}

/** Creates the embedded runtime. */
export function createRuntime(options: RuntimeOptions): Runtime {
  return new Runtime(options);
}
