/**
 * The server's background pruner (docs/data/lifetimes.md): every `intervalMs` it expires each
 * layer past its retention, a bounded batch at a time, yielding to the event loop between
 * batches so a large backlog never holds the loop (or a lock) for long. It stops at the next
 * batch once stopped, and `stop()` waits for that batch only.
 */
import {
  createId,
  DEFAULT_RETENTION,
  RETENTION_LAYERS,
  retentionCutoffs,
  type Clock,
  type Logger,
  type RetentionLayer,
  type RetentionSettings,
  type TimerHandle,
  type Timers,
} from "../core/index.js";
import type { Store } from "../store/index.js";
import { runInBackground } from "./background.js";

/** How many rows one batch prunes at most (one short transaction). */
export const DEFAULT_PRUNE_BATCH_SIZE = 500;
/**
 * The share of the event loop a sweep may take while it catches up with a backlog: after each
 * full batch it pauses for its duration × (1 / share − 1). On SQLite a batch runs in the event
 * loop itself, so without the pauses a backlog of expired rows would take the whole loop from
 * the runs being served (prune-cost measured the stream path at 5% of its speed); at 1/40 a
 * sweep still expires thousands of rows a second.
 */
export const PRUNE_LOOP_SHARE = 1 / 40;
/** How often the server prunes (default every 10 minutes). */
export const DEFAULT_PRUNE_INTERVAL_MS = 10 * 60_000;

/** How many rows of each layer a prune expired (or, for a dry run, would). */
export type PruneCounts = Record<RetentionLayer, number>;

export interface RetentionPrunerOptions {
  store: Store;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  settings?: Partial<RetentionSettings>;
  intervalMs?: number;
  batchSize?: number;
}

export class RetentionPruner {
  readonly #options: RetentionPrunerOptions;
  readonly #settings: RetentionSettings;
  #timer: TimerHandle | undefined;
  #sweep: Promise<PruneCounts> | undefined;
  #isStopped = false;
  /** Ends the pause between two batches at once (a stop does not wait it out). */
  #endPause: (() => void) | undefined;

  constructor(options: RetentionPrunerOptions) {
    this.#options = options;
    this.#settings = { ...DEFAULT_RETENTION, ...options.settings };
  }

  /** Prunes now and then every interval, until {@link stop}. */
  start(): void {
    const { timers, logger, intervalMs = DEFAULT_PRUNE_INTERVAL_MS } = this.#options;
    const tick = () => runInBackground(logger, "prune expired data", () => this.pruneOnce());
    this.#timer = timers.setInterval(tick, intervalMs);
    tick();
  }

  /**
   * One sweep: every layer, batch after batch, until none is left or the pruner stops. A sweep
   * already under way is joined, not doubled.
   */
  pruneOnce(): Promise<PruneCounts> {
    this.#sweep ??= this.#prune().finally(() => {
      this.#sweep = undefined;
    });
    return this.#sweep;
  }

  async #prune(): Promise<PruneCounts> {
    const { store, clock, logger, batchSize = DEFAULT_PRUNE_BATCH_SIZE } = this.#options;
    const counts: PruneCounts = { traces: 0, run_detail: 0, fragments: 0, operations: 0 };
    const now = clock.now();
    const cutoffs = retentionCutoffs(this.#settings, now);
    for (const layer of RETENTION_LAYERS) {
      const before = cutoffs.get(layer);
      if (before === undefined) continue;
      while (!this.#isStopped) {
        const startedAt = performance.now();
        const pruned = await store.pruneExpired({ layer, before, limit: batchSize, createCheckpointId: () => createId("cp"), now });
        counts[layer] += pruned;
        if (pruned < batchSize) break;
        await this.#pause((performance.now() - startedAt) * (1 / PRUNE_LOOP_SHARE - 1));
      }
    }
    if (Object.values(counts).some((count) => count > 0)) logger.info({ ...counts }, "pruned expired data");
    return counts;
  }

  /**
   * Waits `ms` between two batches. Real time, not the injected timers: this paces the share of
   * the event loop a sweep takes, it is not a lifetime; fake time in tests leaves it alone.
   */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#endPause?.(), Math.max(1, ms));
      timer.unref();
      this.#endPause = () => {
        clearTimeout(timer);
        this.#endPause = undefined;
        resolve();
      };
    });
  }

  /** Stops the timer, and waits for the batch under way (the sweep ends after it). */
  async stop(): Promise<void> {
    this.#isStopped = true;
    this.#endPause?.();
    this.#options.timers.clear(this.#timer);
    await this.#sweep?.catch(() => undefined);
  }
}
