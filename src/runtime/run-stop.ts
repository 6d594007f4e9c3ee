import { isStopDecided, nextStop, type StopEvent, type StopState } from "../core/index.js";
import type { CancelScope } from "./cancel-scope.js";
import { LeaseLostError } from "./lease-lost-error.js";
import { CancelRequestedError } from "./run-errors.js";

/**
 * The stop of one run executing in this process: the one value the cancel path, the cluster
 * worker and a drain write (through {@link apply}) and the executor reads. The decisions are
 * `nextStop`'s; this only carries them out on the run's scope.
 */
export class RunStop {
  readonly #scope: CancelScope;
  #state: StopState = { kind: "none" };
  #whenDecided: Promise<void> | undefined;
  #markDecided: (() => void) | undefined;

  constructor(scope: CancelScope) {
    this.#scope = scope;
  }

  get state(): StopState {
    return this.#state;
  }

  /** Applies an event; returns whether it aborted the work (the first Stop or drain does). */
  apply(event: StopEvent): boolean {
    const step = nextStop(this.#state, event);
    this.#state = step.state;
    if (step.abortWork) this.#scope.cancel(abortReason(step.state));
    if (isStopDecided(this.#state)) this.#markDecided?.();
    return step.abortWork;
  }

  /** Resolves once the stop's outcome is known: settling waits, so nothing publishes before a Stop is recorded or refused. */
  whenDecided(): Promise<void> {
    if (isStopDecided(this.#state)) return Promise.resolve();
    this.#whenDecided ??= new Promise((resolve) => (this.#markDecided = resolve));
    return this.#whenDecided;
  }
}

/** A user's Stop (asked, recorded or refused): the run ends here, and no other attempt follows this one. */
export function endsTheRun(state: StopState): boolean {
  return state.kind === "requested" || state.kind === "recorded" || state.kind === "unrecorded";
}

function abortReason(state: StopState): Error {
  if (state.kind === "draining") return new Error("shutdown");
  if (state.kind === "fenced") return new LeaseLostError();
  return new CancelRequestedError(reasonOf(state));
}

function reasonOf(state: StopState): string {
  return "reason" in state ? state.reason : "shutdown";
}
