import { InvariantError } from "../core/errors/invariant-error.js";

const MARKER = Symbol.for("tidemark.store-invariant-error");

/** Which of the store's rules was broken. */
export type StoreInvariant =
  /** A row changed under a transaction that held its lock, or a status write that had to succeed did not. */
  | "compare_and_set_failed"
  /** A run transition outside the state machine (core `canTransition`). */
  | "illegal_transition"
  /** A thread's fork chain loops or names a thread that is gone. */
  | "broken_lineage";

/**
 * The store found its own data or a caller's request breaking a rule it guarantees (a failed
 * compare-and-set inside a transaction, an illegal transition, a broken fork chain). Never a
 * user's mistake: reported as `internal_error`, and `tidemark check` finds the data behind it.
 */
export class StoreInvariantError extends InvariantError {
  readonly [MARKER] = true;
  readonly invariant: StoreInvariant;
  /** The thread, run, message or operation the rule is about. */
  readonly subjectId: string;

  constructor(invariant: StoreInvariant, subjectId: string, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "StoreInvariantError";
    this.invariant = invariant;
    this.subjectId = subjectId;
  }

  /** Whether `value` is a StoreInvariantError (also across module copies). */
  static override isInstance(value: unknown): value is StoreInvariantError {
    return typeof value === "object" && value !== null && MARKER in value;
  }
}
