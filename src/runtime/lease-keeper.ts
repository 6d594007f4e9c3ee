/**
 * A worker's lease heartbeat and its self-fencing (decision 014).
 *
 * Every third of the lease, the keeper renews the leases of the runs this process executes. It
 * knows, per run, until when the lease is surely valid: the claim's expiry, then each renewal's
 * `sentAt + leaseMs` once the store confirmed it. A renewal that does not answer within a sixth
 * of the lease counts as failed (a stalled connection never answers), and another is sent at once.
 * When a run comes within the fence margin (a third of the lease) of its known expiry, the keeper
 * lets go of it: it aborts the run's work (the provider request is closed) and marks its stop
 * `fenced`, so nothing more is written for it here and its lease is never renewed again. Recovery
 * elsewhere takes the run once the lease expired and applies the run's policy.
 */
import type { Clock, RunRecord, TimerHandle, Timers } from "../core/index.js";
import type { Logger } from "../core/logger.js";
import type { Store } from "../store/index.js";
import { runInBackground } from "./background.js";
import type { RunExecution } from "./run-execution.js";

/** What the keeper needs. */
export interface LeaseKeeperPorts {
  store: Store;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  workerId: string;
  leaseMs: number;
  /** The runs this process executes, by run key. */
  active: ReadonlyMap<string, RunExecution>;
  trace(run: RunRecord, kind: string, data: Record<string, unknown>): void;
  /** Called for each run this process lets go of (metrics). */
  onLeaseLost?(run: RunRecord): void;
}

/** The heartbeat's timings, all derived from the lease. */
export interface LeaseTimings {
  /** How often a healthy worker renews (a third of the lease). */
  renewEveryMs: number;
  /** How long one renewal may take before it counts as failed (a sixth of the lease). */
  renewTimeoutMs: number;
  /** A run is let go this long before its known lease expiry (a third of the lease). */
  fenceMarginMs: number;
  /** How often the keeper compares the runs' known expiries with the clock (a twelfth of the lease). */
  checkEveryMs: number;
}

/** The timings for a lease of `leaseMs`. */
export function leaseTimings(leaseMs: number): LeaseTimings {
  return {
    renewEveryMs: Math.max(50, leaseMs / 3),
    renewTimeoutMs: Math.max(25, leaseMs / 6),
    fenceMarginMs: leaseMs / 3,
    checkEveryMs: Math.max(10, leaseMs / 12),
  };
}

/** Renews the leases of the runs this process executes, and lets go of those it could not renew in time. */
export class LeaseKeeper {
  readonly #ports: LeaseKeeperPorts;
  readonly #timings: LeaseTimings;
  /** Per run executing here: the latest lease expiry the store confirmed. */
  readonly #knownExpiry = new Map<RunExecution, number>();
  #timers: TimerHandle[] = [];
  #retry: TimerHandle | undefined;
  #isRenewing = false;
  #isStopped = false;
  #failedSince: number | undefined;
  #lastRenewedAt: number | undefined;

  constructor(ports: LeaseKeeperPorts) {
    this.#ports = ports;
    this.#timings = leaseTimings(ports.leaseMs);
  }

  /** Starts the heartbeat and the fence check. */
  start(): void {
    const { timers } = this.#ports;
    this.#lastRenewedAt = this.#ports.clock.now();
    this.#timers = [
      timers.setInterval(() => this.#renewSoon(), this.#timings.renewEveryMs),
      timers.setInterval(() => this.#fenceLapsing(), this.#timings.checkEveryMs),
    ];
  }

  /** Stops both (a drain or a close). */
  stop(): void {
    this.#isStopped = true;
    for (const timer of [...this.#timers, this.#retry]) this.#ports.timers.clear(timer);
    this.#timers = [];
    this.#retry = undefined;
  }

  #renewSoon(): void {
    if (this.#isRenewing || this.#isStopped) return;
    runInBackground(this.#ports.logger, "lease heartbeat", () => this.renew());
  }

  /** One renewal of the leases of the runs executing here; resolves once it succeeded, failed or timed out. */
  async renew(): Promise<void> {
    const { store, clock, timers, workerId, leaseMs } = this.#ports;
    this.#isRenewing = true;
    const executions = this.#held();
    const sentAt = clock.now();
    let timer: TimerHandle | undefined;
    const timedOut = new Promise<"timed_out">((resolve) => (timer = timers.setTimeout(() => resolve("timed_out"), this.#timings.renewTimeoutMs)));
    try {
      const runs = executions.map(({ run }) => ({ tenantId: run.tenantId, runId: run.runId }));
      const renewal = store.renewLeases(workerId, sentAt + leaseMs, { runs }).then(() => "renewed" as const);
      // A renewal that answers after its timeout is ignored: the lease it set only ends later than assumed.
      renewal.catch(() => undefined);
      const outcome = await Promise.race([renewal, timedOut]);
      if (outcome === "renewed") {
        for (const execution of executions) this.#knownExpiry.set(execution, Math.max(this.#expiryOf(execution) ?? 0, sentAt + leaseMs));
        // With no run to renew the store was not asked: that proves nothing about it.
        if (executions.length > 0) this.#renewed(sentAt);
      } else {
        this.#failed(sentAt, `no answer within ${this.#timings.renewTimeoutMs} ms`, 0);
      }
    } catch (error) {
      this.#failed(sentAt, error instanceof Error ? error.message : String(error), this.#timings.checkEveryMs);
    } finally {
      timers.clear(timer);
      this.#isRenewing = false;
    }
  }

  #renewed(sentAt: number): void {
    if (this.#failedSince !== undefined) {
      this.#ports.logger.info({ worker_id: this.#ports.workerId, failing_ms: sentAt - this.#failedSince }, "lease renewals succeed again");
    }
    this.#failedSince = undefined;
    this.#lastRenewedAt = Math.max(this.#lastRenewedAt ?? 0, sentAt);
  }

  /** A renewal failed: retry after `retryMs` (at once after a timeout, which already waited; a little later after an error). */
  #failed(sentAt: number, cause: string, retryMs: number): void {
    const { logger, workerId, timers } = this.#ports;
    if (this.#failedSince === undefined) {
      this.#failedSince = sentAt;
      logger.warn({ worker_id: workerId, last_renewed_at: this.#lastRenewedAt, cause }, "lease renewal failed");
    }
    // Try again before the next beat: the runs have only a few chances before the fence.
    timers.clear(this.#retry);
    if (this.#isStopped) return;
    this.#retry = timers.setTimeout(() => this.#renewSoon(), retryMs);
  }

  /** The runs executing here that this process holds and has not let go of. */
  #held(): RunExecution[] {
    const held: RunExecution[] = [];
    for (const execution of this.#ports.active.values()) {
      if (execution.stop.state.kind !== "fenced" && this.#expiryOf(execution) !== undefined) held.push(execution);
    }
    return held;
  }

  /** The latest expiry of the run's lease this process knows of; undefined before it claimed the run. */
  #expiryOf(execution: RunExecution): number | undefined {
    const { run } = execution;
    const claimed = run.leaseOwner === this.#ports.workerId && run.leaseExpiresAt !== null ? run.leaseExpiresAt : undefined;
    const renewed = this.#knownExpiry.get(execution);
    if (claimed === undefined) return renewed;
    return renewed === undefined ? claimed : Math.max(claimed, renewed);
  }

  /** Lets go of every run whose known lease expiry is within the fence margin. */
  #fenceLapsing(): void {
    const { active, clock, logger, workerId, trace } = this.#ports;
    const running = new Set(active.values());
    for (const execution of this.#knownExpiry.keys()) if (!running.has(execution)) this.#knownExpiry.delete(execution);
    const now = clock.now();
    const fenced: { execution: RunExecution; expiresAt: number }[] = [];
    for (const execution of this.#held()) {
      const expiresAt = this.#expiryOf(execution)!;
      if (now < expiresAt - this.#timings.fenceMarginMs) continue;
      execution.stop.apply({ type: "lease_lost" });
      fenced.push({ execution, expiresAt });
    }
    if (fenced.length === 0) return;
    logger.error(
      {
        worker_id: workerId,
        run_ids: fenced.map(({ execution }) => execution.run.runId),
        last_renewed_at: this.#lastRenewedAt,
        lease_expires_at: Math.min(...fenced.map(({ expiresAt }) => expiresAt)),
      },
      "leases could not be renewed: stopped the runs (self-fenced); recovery elsewhere decides their end",
    );
    for (const { execution, expiresAt } of fenced) {
      this.#ports.onLeaseLost?.(execution.run);
      // Written in the background: it reaches the trace log once the database answers again.
      trace(execution.run, "lease_lost", { worker_id: workerId, fenced_at: now, lease_expires_at: expiresAt, last_renewed_at: this.#lastRenewedAt });
    }
  }
}
