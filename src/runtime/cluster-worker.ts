/**
 * A worker's part in a scaled deployment: it claims queued runs while it has room (woken by the
 * cluster, polled as the fallback), and acts on the cancels and decisions other processes
 * accepted for the runs it executes.
 */
import type { Cluster, ControlMessage } from "./cluster.js";
import { acceptedCancelOf, TidemarkError, type Clock, type RunRecord, type TimerHandle, type Timers } from "../core/index.js";
import type { Store } from "../store/index.js";
import type { Approvals } from "./approvals.js";
import { runInBackground } from "./background.js";
import { stopForAcceptedCancel } from "./cancel-run.js";
import { runLogFields, type Logger } from "../core/logger.js";
import type { RunExecution } from "./run-execution.js";
import { runKey } from "./run-key.js";

export interface ClusterWorkerOptions {
  cluster: Cluster;
  store: Store;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  workerId: string;
  leaseMs: number;
  maxConcurrentRuns: number;
  pollMs: number;
  eventTtlMs: number;
  /** Runs being executed by this process, by {@link runKey}. */
  active: ReadonlyMap<string, RunExecution>;
  approvals: Approvals;
  /** Executes a run this worker already claimed. */
  execute(run: RunRecord): void;
  isClosed(): boolean;
}

export class ClusterWorker {
  readonly #options: ClusterWorkerOptions;
  #isClaiming = false;
  #isClaimAgain = false;

  constructor(options: ClusterWorkerOptions) {
    this.#options = options;
  }

  /** Listens to the cluster and starts the fallback polls; returns their timers. */
  start(): TimerHandle[] {
    const { cluster, logger, pollMs, eventTtlMs, clock, timers } = this.#options;
    cluster.onQueued(() => this.claimSoon());
    cluster.onControl((message) => this.#onControl(message));
    const poll = timers.setInterval(() => {
      this.claimSoon();
      runInBackground(logger, "cancel check", () => this.#checkCancels());
    }, pollMs);
    const prune = timers.setInterval(() => {
      runInBackground(logger, "prune event logs", () => cluster.pruneEvents(clock.now() - eventTtlMs));
    }, 60_000);
    return [poll, prune];
  }

  /** Claims queued runs while this worker has room; one claimer at a time, again if woken meanwhile. */
  claimSoon(): void {
    if (this.#options.isClosed()) return;
    if (this.#isClaiming) {
      this.#isClaimAgain = true;
      return;
    }
    this.#isClaiming = true;
    runInBackground(this.#options.logger, "claim queued runs", async () => {
      try {
        do {
          this.#isClaimAgain = false;
          await this.#claimWhileRoom();
        } while (this.#isClaimAgain && !this.#options.isClosed());
      } finally {
        this.#isClaiming = false;
      }
    });
  }

  async #claimWhileRoom(): Promise<void> {
    const { store, clock, workerId, leaseMs, maxConcurrentRuns, active } = this.#options;
    while (!this.#options.isClosed()) {
      const limit = Math.min(16, maxConcurrentRuns - active.size);
      if (limit <= 0) return;
      const now = clock.now();
      const claimed = await store.claimQueuedRuns({ owner: workerId, leaseExpiresAt: now + leaseMs, limit, now });
      if (this.#options.isClosed()) {
        // Drained while claiming: these go straight back, untouched.
        for (const run of claimed) await store.transitionRun({ tenantId: run.tenantId, runId: run.runId, from: ["running"], to: "queued", now });
        if (claimed.length > 0) this.#options.cluster.announceQueued();
        return;
      }
      for (const run of claimed) this.#options.execute(run);
      if (claimed.length < limit) return;
    }
  }

  /** A cancel or a decision another process accepted, for a run this process may be executing. */
  #onControl(message: ControlMessage): void {
    const { store, clock, logger, approvals } = this.#options;
    const execution = this.#options.active.get(runKey(message.tenantId, message.runId));
    if (!execution) return;
    if (message.kind === "cancel") {
      const accepted = { reason: message.reason, stateVersion: message.stateVersion, checkpointId: message.checkpointId, kind: "cancel_accepted" as const };
      runInBackground(logger, "accepted cancel", () => stopForAcceptedCancel({ store, clock }, execution, accepted), runLogFields(execution.run));
    } else if (approvals.isWaiting(message.tenantId, message.runId)) {
      runInBackground(logger, "forwarded decision", () =>
        approvals.decide(message.tenantId, message.runId, message.decision).catch((error: unknown) => {
          // A decision that lost a race (the run was cancelled meanwhile) is answered by the run's status.
          if (!(error instanceof TidemarkError)) throw error;
        }),
        runLogFields(execution.run),
      );
    }
  }

  /** The fallback for a lost cancel notice: the runs this worker holds whose cancel was accepted (a no-op for those already stopped). */
  async #checkCancels(): Promise<void> {
    const { store, clock, active, workerId } = this.#options;
    if (active.size === 0) return;
    for (const run of await store.listCancelledRuns(workerId)) {
      const execution = active.get(runKey(run.tenantId, run.runId));
      const accepted = acceptedCancelOf(run);
      if (!execution || !accepted) continue;
      const { reason, stateVersion, checkpointId } = accepted;
      await stopForAcceptedCancel({ store, clock }, execution, { reason, stateVersion, checkpointId, kind: "cancel_accepted" });
    }
  }
}
