/**
 * The server's background pruner (docs/data/lifetimes.md): every `intervalMs` it expires each
 * layer past its retention, a bounded batch at a time, yielding to the event loop between
 * batches so a large backlog never holds the loop (or a lock) for long. It stops at the next
 * batch once stopped, and `stop()` waits for that batch only.
 */
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
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
        const pruned = await store.pruneExpired({ layer, before, limit: batchSize, createCheckpointId: () => createId("cp"), now });
        counts[layer] += pruned;
        if (pruned < batchSize) break;
        await yieldToEventLoop();
      }
    }
    if (Object.values(counts).some((count) => count > 0)) logger.info({ ...counts }, "pruned expired data");
    return counts;
  }

  /** Stops the timer, and waits for the batch under way (the sweep ends after it). */
  async stop(): Promise<void> {
    this.#isStopped = true;
    this.#options.timers.clear(this.#timer);
    await this.#sweep?.catch(() => undefined);
  }
}
