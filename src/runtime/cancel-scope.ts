import { setMaxListeners } from "node:events";

/**
 * A cancellation scope: one node of a run's `AbortSignal` tree (run → step → provider request
 * or tool call), after Temporal's `CancellationScope` (DESIGN §4).
 *
 * Cancelling a scope aborts its signal and every descendant's, never its parent's. A cancel is
 * *requested* (`isCancelRequested`) the moment someone asks for it; whether the work has actually
 * *stopped* is for the code holding the signal to report, once its promise settles. Work that must
 * finish anyway (a commit already handed to an external system, the final checkpoint write) runs
 * in `shield`, with a signal that no ancestor's cancel aborts.
 *
 * @example
 * const run = CancelScope.root();
 * const step = run.child();
 * try {
 *   await fetch(url, { signal: step.signal });
 * } finally {
 *   step.dispose();
 * }
 * await run.shield((signal) => store.saveCheckpoint(checkpoint, { signal }));
 */
export class CancelScope {
  /** Aborted when this scope or any ancestor is cancelled; `reason` is the first cancel's reason. */
  readonly signal: AbortSignal;
  readonly #controller: AbortController;
  readonly #parent: CancelScope | undefined;
  #isOwnCancelRequested = false;
  #detachFromParent: (() => void) | undefined;

  private constructor(parent: CancelScope | undefined) {
    this.#controller = new AbortController();
    this.signal = this.#controller.signal;
    // A run scope legitimately has many live children (one per step, request, tool call); the
    // default limit of 10 would warn about a leak that `dispose` already prevents (and tests check).
    setMaxListeners(0, this.signal);
    this.#parent = parent;
    if (parent === undefined) return;
    const parentSignal = parent.signal;
    if (parentSignal.aborted) {
      this.#controller.abort(parentSignal.reason);
      return;
    }
    const onParentAbort = (): void => {
      // `once` already removed the listener; forget the remover so dispose() stays a no-op.
      this.#detachFromParent = undefined;
      this.#controller.abort(parentSignal.reason);
    };
    parentSignal.addEventListener("abort", onParentAbort, { once: true });
    this.#detachFromParent = () => parentSignal.removeEventListener("abort", onParentAbort);
  }

  /** A scope with no parent: the root of one run's tree. */
  static root(): CancelScope {
    return new CancelScope(undefined);
  }

  /** Whether a cancel was requested on this scope or on an ancestor (also after `dispose`). */
  get isCancelRequested(): boolean {
    // Walk the chain rather than read `signal.aborted`: a disposed child no longer hears its parent,
    // but it must still answer truthfully whether the run around it was asked to stop.
    return this.#isOwnCancelRequested || (this.#parent?.isCancelRequested ?? false);
  }

  /** A child scope: cancelling this scope cancels it; cancelling it never cancels this scope. */
  child(): CancelScope {
    return new CancelScope(this);
  }

  /** Requests a cancel of this scope and its descendants; idempotent, the first reason wins. */
  cancel(reason?: unknown): void {
    this.#isOwnCancelRequested = true;
    // Once aborted, nothing the parent does can change this scope any more.
    this.#detach();
    // `abort(undefined)` gives the platform's DOMException "AbortError"; a second call is a no-op.
    this.#controller.abort(reason);
  }

  /**
   * Runs `fn` with a signal that no ancestor's cancel aborts: for a commit already handed to an
   * external system, or the final checkpoint write, whose outcome must be recorded. The caller
   * still sees `isCancelRequested` afterwards and decides what the outcome means.
   */
  async shield<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    // A fresh root, not a child: nothing above it may abort this work.
    const shielded = CancelScope.root();
    return await fn(shielded.signal);
  }

  /** Stops listening to the parent, so that short-lived child scopes leave no listener behind. */
  dispose(): void {
    this.#detach();
  }

  #detach(): void {
    this.#detachFromParent?.();
    this.#detachFromParent = undefined;
  }
}

