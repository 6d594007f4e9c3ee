/**
 * How long each layer's data is kept (DESIGN §1, docs/data/lifetimes.md): one setting per layer,
 * each with a safe default, and the one rule that turns them into cutoffs. The stream buffer and
 * event log keep their own setting (`eventTtlMs`); an erased thread is another matter (erasure).
 */

const DAY_MS = 86_400_000;

/** A layer the pruner expires. */
export type RetentionLayer = "traces" | "run_detail" | "fragments" | "operations";

/** Every {@link RetentionLayer}, in the order the pruner takes them. */
export const RETENTION_LAYERS: readonly RetentionLayer[] = ["traces", "run_detail", "fragments", "operations"];

/** How long each layer is kept, in milliseconds after its row's time; `Infinity` keeps it for ever. */
export interface RetentionSettings {
  /** Execution traces, after they were written (default 30 days). */
  traceTtlMs: number;
  /** A finished run's execution detail (steps, instructions, config), after it ended (default 30 days). */
  runDetailTtlMs: number;
  /** Saved fragments, after they were saved (default for ever: the thread's lifetime). */
  fragmentTtlMs: number;
  /** An operation's full row, after its last change; then it is reduced, never deleted (default 30 days). */
  operationTtlMs: number;
}

/** The defaults: a month of traces, run detail and operation detail; fragments live as long as their thread. */
export const DEFAULT_RETENTION: RetentionSettings = {
  traceTtlMs: 30 * DAY_MS,
  runDetailTtlMs: 30 * DAY_MS,
  fragmentTtlMs: Number.POSITIVE_INFINITY,
  operationTtlMs: 30 * DAY_MS,
};

const SETTING_OF: Record<RetentionLayer, keyof RetentionSettings> = {
  traces: "traceTtlMs",
  run_detail: "runDetailTtlMs",
  fragments: "fragmentTtlMs",
  operations: "operationTtlMs",
};

/**
 * Each layer's cutoff at `now`: its rows from before that time have expired (a row is kept for
 * exactly its setting, and goes after it). A layer kept for ever has none.
 */
export function retentionCutoffs(settings: RetentionSettings, now: number): Map<RetentionLayer, number> {
  const cutoffs = new Map<RetentionLayer, number>();
  for (const layer of RETENTION_LAYERS) {
    const ttlMs = settings[SETTING_OF[layer]];
    if (Number.isFinite(ttlMs)) cutoffs.set(layer, now - ttlMs);
  }
  return cutoffs;
}
