import { createId, isTerminalStatus, systemClock, type Clock, type RecoveryPolicy, type RunEventDraft, type RunRecord, type ThreadRecord } from "../core/index.js";
import type { Store } from "../store/index.js";
import { EventHub } from "../stream/index.js";
import type { Tool } from "../tools/tool.js";
import { Approvals } from "./approvals.js";
import { runInBackground } from "./background.js";
import { abortableDelay } from "./cancel-scope.js";
import { cancelRun, type CancelRunContext, type CancelRunResult } from "./cancel-run.js";
import { titleFromText } from "./demo-model.js";
import { DisconnectWatch } from "./disconnect-watch.js";
import { launchRun, type LaunchRunContext } from "./launch-run.js";
import { silentLogger, type Logger } from "./logger.js";
import type { ChatModel } from "./model.js";
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
  /** What the start, cancel, launch and confirmation paths share with this facade. */
  readonly #context: StartRunContext & CancelRunContext & LaunchRunContext & OperationConfirmationContext;
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
  decide(tenantId: string, runId: string, decision: "approved" | "rejected"): Promise<RunRecord> {
    return this.#approvals.decide(tenantId, runId, decision);
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

  /** Claims a queued run for this process and executes it in the background. */
  #launch(run: RunRecord): void {
    launchRun(this.#context, run);
  }

  /** Appends to the run's buffer; the first event of every attempt is `run.started`. */
  #emitter(run: RunRecord): (draft: RunEventDraft) => void {
    return createRunEmitter(this.hub, run);
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

/** Creates the embedded runtime. */
export function createRuntime(options: RuntimeOptions): Runtime {
  return new Runtime(options);
}
