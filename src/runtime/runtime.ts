import { createId, isTerminalStatus, systemClock, systemTimers, type Clock, type TimerHandle, type Timers, type RecoveryPolicy, type RunEventDraft, type RunRecord, type ThreadRecord } from "../core/index.js";
import type { Cluster } from "./cluster.js";
import type { Store } from "../store/index.js";
import { EventHub, type RunEventBuffer } from "../stream/index.js";
import type { Tool } from "../tools/tool.js";
import { Approvals } from "./approvals.js";
import { runInBackground } from "./background.js";
import { abortableDelay } from "../core/abortable-delay.js";
import { cancelRun, terminateThread, type CancelRunContext, type CancelRunResult } from "./cancel-run.js";
import { ClusterWorker } from "./cluster-worker.js";
import { forwardDecision } from "./forward-decision.js";
import { titleFromText } from "../core/heuristic-title.js";
import { DisconnectWatch } from "./disconnect-watch.js";
import { launchRun, type LaunchRunContext } from "./launch-run.js";
import { silentLogger, type Logger } from "../core/logger.js";
import type { ChatModel } from "../core/model.js";
import { confirmOperation, confirmUnknownOperations, type OperationConfirmationContext } from "./operation-confirmation.js";
import { PendingCancels } from "./pending-cancels.js";
import { recoverRun } from "./recover-run.js";
import { createRunEmitter } from "./run-emitter.js";
import { traceFor, type RunExecution } from "./run-execution.js";
import { runKey } from "./run-key.js";
import type { RuntimeObserver } from "./runtime-observer.js";
import { startRun, type StartRunContext, type StartRunRequest } from "./start-run.js";

export type { RuntimeObserver } from "./runtime-observer.js";
export type { StartRunRequest } from "./start-run.js";
export type { CancelRunResult } from "./cancel-run.js";

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
  /** What this process does (default `all`). `api` and `worker` need a cluster. */
  role?: RuntimeRole;
  /** The other processes on the same database (PostgreSQL); none for the embedded default. */
  cluster?: Cluster;
  /** A worker executes at most this many runs at once (default 64). */
  maxConcurrentRuns?: number;
  /** How often a worker looks for queued runs and accepted cancels without a notification (default 1000 ms). */
  pollMs?: number;
}

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
  readonly #approvals: Approvals;
  readonly #role: RuntimeRole;
  readonly #cluster: Cluster | undefined;
  readonly #worker: ClusterWorker | undefined;
  /** What the start, cancel, launch and confirmation paths share with this facade. */
  readonly #context: StartRunContext & CancelRunContext & LaunchRunContext & OperationConfirmationContext;
  readonly #timerSource: Timers;
  #timers: TimerHandle[] = [];
  #isRecovering = false;
  #isClosed = false;

  constructor(options: RuntimeOptions) {
    this.store = options.store;
    this.model = options.model;
    this.#clock = options.clock ?? systemClock;
    this.#timerSource = options.timers ?? systemTimers;
    this.#logger = options.logger ?? silentLogger;
    this.#leaseMs = options.leaseMs ?? 15_000;
    this.#recoveryPolicy = options.recoveryPolicy ?? "fail";
    this.#observer = options.observer ?? {};
    this.workerId = options.workerId ?? `wrk_${createId("run").slice(4)}`;
    this.hub = new EventHub({ ttlMs: options.eventTtlMs, timers: this.#timerSource });
    this.#role = options.role ?? "all";
    this.#cluster = options.cluster;
    if (this.#role !== "all" && !this.#cluster) throw new Error(`The ${this.#role} role needs a cluster (PostgreSQL).`);

    this.#tools = new Map((options.tools ?? []).map((tool) => [tool.name, tool]));
    this.#disconnectWatch = new DisconnectWatch(options.disconnectGraceMs ?? 5_000, (tenantId, runId) =>
      runInBackground(this.#logger, "on_disconnect cancel", () => this.cancelRun(tenantId, runId, "client_disconnected")),
      this.#timerSource,
    );
    this.#approvals = new Approvals({
      store: this.store,
      clock: this.#clock,
      emitter: (run) => this.#emitter(run),
      trace: (run, kind, data) => this.#trace(run, kind, data),
    });
    this.#context = {
      store: this.store,
      model: this.model,
      clock: this.#clock,
      logger: this.#logger,
      hub: this.hub,
      leaseMs: this.#leaseMs,
      workerId: this.workerId,
      recoveryPolicy: this.#recoveryPolicy,
      observer: this.#observer,
      tools: this.#tools,
      active: this.#active,
      executions: this.#executions,
      pendingCancels: this.#pendingCancels,
      cluster: this.#cluster,
      onRunSettled: () => {
        this.#worker?.claimSoon();
      },
      disconnectWatch: this.#disconnectWatch,
      isClosed: () => this.#isClosed,
      emitter: (run) => this.#emitter(run),
      trace: (run, kind, data) => this.#trace(run, kind, data),
      saveTitle: (thread, firstMessage) => this.#saveTitle(thread, firstMessage),
      launch: (run) => this.#launch(run),
      admitNext: (tenantId, threadId) => this.#admitNext(tenantId, threadId),
      cancelRun: (tenantId, runId, reason) => this.cancelRun(tenantId, runId, reason),
      waitForTerminal: (tenantId, runId, timeoutMs) => this.waitForTerminal(tenantId, runId, timeoutMs),
      confirmUnknownOperations: (tenantId, threadId) => confirmUnknownOperations(this.#context, tenantId, threadId),
      awaitApproval: (execution, operation, signal) => this.#approvals.awaitApproval(execution, operation, signal),
    };
    this.#worker =
      this.#cluster && this.#role !== "api"
        ? new ClusterWorker({
            cluster: this.#cluster,
            store: this.store,
            clock: this.#clock,
            timers: this.#timerSource,
            logger: this.#logger,
            workerId: this.workerId,
            leaseMs: this.#leaseMs,
            maxConcurrentRuns: options.maxConcurrentRuns ?? 64,
            pollMs: options.pollMs ?? 1_000,
            eventTtlMs: options.eventTtlMs ?? 15 * 60_000,
            active: this.#active,
            approvals: this.#approvals,
            execute: (run) => launchRun(this.#context, run, true),
            isClosed: () => this.#isClosed,
          })
        : undefined;
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

  /** What this process does. */
  get role(): RuntimeRole {
    return this.#role;
  }

  /**
   * Starts the lease heartbeat and the recovery sweep (and runs one sweep now); with a cluster, a
   * worker also claims queued runs (woken by NOTIFY, polled as the fallback) and listens for the
   * cancels and approvals other processes accepted. An API process executes nothing.
   */
  async start(): Promise<void> {
    if (this.#role === "api") return;
    const heartbeat = this.#timerSource.setInterval(() => {
      runInBackground(this.#logger, "lease heartbeat", () =>
        this.store.renewLeases(this.workerId, this.#clock.now() + this.#leaseMs),
      );
    }, Math.max(50, this.#leaseMs / 3));
    const sweep = this.#timerSource.setInterval(() => runInBackground(this.#logger, "recovery", () => this.recover()), Math.max(50, this.#leaseMs / 2));
    this.#timers = [heartbeat, sweep];
    if (this.#worker) this.#timers.push(...this.#worker.start());
    await this.recover();
    this.#worker?.claimSoon();
  }

  /**
   * The buffer to stream a run's events from: this process's own when it executes the run, else
   * (scaled) the shared log's, followed live. Undefined when the stream is gone.
   */
  async openEvents(tenantId: string, run: RunRecord, afterSeq: number): Promise<RunEventBuffer | undefined> {
    const local = this.hub.get(tenantId, run.runId);
    if (!this.#cluster || this.#active.has(runKey(tenantId, run.runId))) return local;
    const buffer = await this.#cluster.follow(this.hub, tenantId, run.runId, run.attempt, afterSeq);
    if (isTerminalStatus(run.status) && !buffer.terminalEvent) {
      // The terminal event may be a moment behind the status; if it never comes, the log is gone.
      const waiter = new AbortController();
      await Promise.race([buffer.whenTerminal(), abortableDelay(2_000, waiter.signal)]).finally(() => waiter.abort());
      if (!buffer.terminalEvent) return undefined;
    }
    return buffer;
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
    return startRun(this.#context, request);
  }

  /** Accepts a cancel (STOP) for one run; never refused for a stale version. */
  cancelRun(tenantId: string, runId: string, reason: string): Promise<CancelRunResult> {
    return cancelRun(this.#context, tenantId, runId, reason);
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

  /** TERMINATE: deletes the thread and cancels every run of it, atomically; undefined if not found. */
  terminateThread(tenantId: string, threadId: string): Promise<{ cancelledRunIds: string[] } | undefined> {
    return terminateThread(this.#context, tenantId, threadId);
  }

  /**
   * Recovers runs whose lease expired (their process died): by policy they fail with
   * `worker_lost` or resume from the last checkpoint; a run whose cancel was accepted is
   * cancelled, since its work stopped with its worker. Returns how many were recovered.
   */
  async recover(): Promise<number> {
    if (this.#isRecovering || this.#isClosed || this.#role === "api") return 0;
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
          owner: this.workerId,
          leaseMs: this.#leaseMs,
          logger: this.#logger,
          launch: (queued) => this.#launch(queued),
          trace: (traced, kind, data) => this.#trace(traced, kind, data),
          emitter: (ended) => this.#continuingEmitter(ended),
        });
        if (recoveredRun) recovered++;
      }
      for (const { tenantId, threadId } of await this.store.listThreadsWithWaitingRuns()) await this.#admitNext(tenantId, threadId);
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
    return confirmOperation(this.#context, tenantId, threadId, opId, outcome, result);
  }

  /** Starts the oldest run waiting on a thread once the thread is free (multitask `enqueue`). */
  async #admitNext(tenantId: string, threadId: string): Promise<void> {
    const run = await this.store.admitNextRun(tenantId, threadId, createId("cp"), this.#clock.now());
    if (!run) return;
    this.#trace(run, "run_admitted", { base_checkpoint_id: run.baseCheckpointId });
    if (run.onDisconnect === "cancel") this.#disconnectWatch.watch(run.tenantId, run.runId);
    this.#launch(run);
  }

  /** Claims a queued run for this process and executes it in the background (an API process wakes the workers instead). */
  #launch(run: RunRecord): void {
    if (this.#role === "api") this.#cluster?.announceQueued();
    else launchRun(this.#context, run);
  }

  /** Appends to the run's buffer; the first event of every attempt is `run.started`. */
  #emitter(run: RunRecord): (draft: RunEventDraft) => void {
    const cluster = this.#cluster;
    return createRunEmitter(this.hub, run, cluster ? (event) => cluster.publishEvent(run.tenantId, event) : undefined);
  }

  /** The emitter of a run another process was executing: its attempt's stream continues from the shared log. */
  async #continuingEmitter(run: RunRecord): Promise<(draft: RunEventDraft) => void> {
    if (this.#cluster && !this.#active.has(runKey(run.tenantId, run.runId))) {
      await this.#cluster.follow(this.hub, run.tenantId, run.runId, run.attempt);
      this.#cluster.unfollow(run.tenantId, run.runId);
    }
    return this.#emitter(run);
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
   * Drains: stops claiming and sweeping, and hands every run this process is executing back to
   * the queue at its next safe point (`worker_draining`: a purposeful stop is not a failure),
   * then waits for them to settle.
   */
  async close(): Promise<void> {
    this.#isClosed = true;
    for (const timer of this.#timers) this.#timerSource.clear(timer);
    for (const execution of this.#active.values()) {
      execution.stopCause ??= { kind: "shutdown" };
      execution.scope.cancel(new Error("shutdown"));
    }
    const wasExecuting = this.#executions.size > 0;
    await Promise.allSettled([...this.#executions]);
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
