import type { RunRecord } from "../core/index.js";
import type { ExecutionOutcome } from "./execute-run.js";

/** Hooks for metrics; all optional. */
export interface RuntimeObserver {
  /** A cancel was accepted by the store. */
  onCancelAccepted?(run: RunRecord): void;
  /** `run.cancelled` was emitted, `elapsedMs` after the cancel was accepted. */
  onCancelCompleted?(run: RunRecord, elapsedMs: number): void;
  onRunEnded?(run: RunRecord, outcome: ExecutionOutcome): void;
  /** This process took over a run whose process was lost (recovery acted on it). */
  onRunRecovered?(run: RunRecord): void;
  /** This process could not renew the run's lease in time and let go of it (self-fenced, decision 014). */
  onLeaseLost?(run: RunRecord): void;
  /**
   * The provider delivered a chunk after the run's Stop had aborted its request: the chunk was
   * discarded at the safe point between chunks, and the read ended there.
   */
  onChunkAfterStop?(run: RunRecord): void;
}
