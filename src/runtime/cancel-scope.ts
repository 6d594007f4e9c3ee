import { setMaxListeners } from "node:events";
import { ShieldTimeoutError } from "./shield-timeout-error.js";

/** How long shielded work may go on after a cancel was requested, unless the root says otherwise. */
export const DEFAULT_SHIELD_TIMEOUT_MS = 30_000;

/** What shielded work may know about the scope around it: it hears a cancel request, it is not aborted by it. */
export interface ShieldContext {
  /** Aborted when a cancel is requested of the scope around the shield: informational, the work may go on. */
  readonly requested: AbortSignal;
  /** Whether a cancel was requested of the scope around the shield. */
  readonly isCancelRequested: boolean;
}

/** Options for {@link CancelScope.shield}. */
export interface ShieldOptions {
  /** How long the work may go on once a cancel was requested (default: the root's `shieldTimeoutMs`). */
  timeoutMs?: number;
}

/**
 * A cancellation scope: one node of a run's `AbortSignal` tree (run → step → provider request
 * or tool call), after Temporal's `CancellationScope` (DESIGN §4).
 *
 * Cancelling a scope aborts its signal and every descendant's, never its parent's. A cancel is
 * *requested* (`isCancelRequested`) the moment someone asks for it; whether the work has actually
 * *stopped* is for the code holding the signal to report, once its promise settles. Work that must
 * finish anyway (a commit already handed to an external system, the final checkpoint write) runs
 * in `shield`, with a signal that no ancestor's cancel aborts. It still hears the request, and it
 * is bounded: once a cancel was requested it has `shieldTimeoutMs` to finish, then its signal is
 * aborted and the caller gets a {@link ShieldTimeoutError}, so a hung commit cannot hold a Stop
 * (or a shutdown) for ever.
 *
 * @example
 * const run = CancelScope.root({ shieldTimeoutMs: 30_000 });
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
  readonly #shieldTimeoutMs: number;
  #isOwnCancelRequested = false;
  #detachFromParent: (() => void) | undefined;

  private constructor(parent: CancelScope | undefined, shieldTimeoutMs: number) {
    this.#shieldTimeoutMs = shieldTimeoutMs;
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

  /**
   * A scope with no parent: the root of one run's tree. `shieldTimeoutMs` bounds every `shield`
   * in the tree once a cancel was requested (default {@link DEFAULT_SHIELD_TIMEOUT_MS}).
   */
  static root(options: { shieldTimeoutMs?: number } = {}): CancelScope {
    return new CancelScope(undefined, options.shieldTimeoutMs ?? DEFAULT_SHIELD_TIMEOUT_MS);
  }

  /** How long shielded work in this scope may go on after a cancel was requested. */
  get shieldTimeoutMs(): number {
    return this.#shieldTimeoutMs;
  }

  /** Whether a cancel was requested on this scope or on an ancestor (also after `dispose`). */
  get isCancelRequested(): boolean {
    // Walk the chain rather than read `signal.aborted`: a disposed child no longer hears its parent,
    // but it must still answer truthfully whether the run around it was asked to stop.
    return this.#isOwnCancelRequested || (this.#parent?.isCancelRequested ?? false);
  }

  /** A child scope: cancelling this scope cancels it; cancelling it never cancels this scope. */
  child(): CancelScope {
    return new CancelScope(this, this.#shieldTimeoutMs);
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
   * external system, or the final checkpoint write, whose outcome must be recorded. `fn` still
   * hears a cancel request (`context.requested`, `context.isCancelRequested`), and from that moment
   * it has `timeoutMs` to finish: then its signal is aborted with a {@link ShieldTimeoutError}, and
   * so is the returned promise, whatever `fn` does next. Without a cancel request it is not timed.
   */
  async shield<T>(fn: (signal: AbortSignal, context: ShieldContext) => Promise<T>, options: ShieldOptions = {}): Promise<T> {
    const timeoutMs = options.timeoutMs ?? this.#shieldTimeoutMs;
    // Its own controller, not a child's: nothing above it may abort this work, only its bound.
    const shielded = new AbortController();
    // A child only to hear the request; disposed below, so it leaves no listener behind.
    const hearing = this.child();
    const context: ShieldContext = {
      requested: hearing.signal,
      get isCancelRequested() {
        return hearing.isCancelRequested;
      },
    };
    let timer: NodeJS.Timeout | undefined;
    let startTimer: (() => void) | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      startTimer = () => {
        if (!Number.isFinite(timeoutMs)) return;
        timer = setTimeout(() => {
          const error = new ShieldTimeoutError(timeoutMs);
          shielded.abort(error);
          reject(error);
        }, Math.max(0, timeoutMs));
      };
    });
    if (hearing.signal.aborted) startTimer?.();
    else if (startTimer) hearing.signal.addEventListener("abort", startTimer, { once: true });
    // Called now, as an async function would be; a synchronous throw becomes a rejection.
    const work = new Promise<T>((resolve) => resolve(fn(shielded.signal, context)));
    // Once the bound ran out nobody awaits the work any more: a late failure of it is not unhandled.
    work.catch(() => undefined);
    try {
      return await Promise.race([work, timedOut]);
    } finally {
      clearTimeout(timer);
      if (startTimer) hearing.signal.removeEventListener("abort", startTimer);
      hearing.dispose();
    }
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

