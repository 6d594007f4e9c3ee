import { systemTimers, type TimerHandle, type Timers } from "../core/timers.js";

interface WatchedRun {
  subscribers: number;
  timer: TimerHandle | undefined;
}

/**
 * `on_disconnect: "cancel"`: a run is cancelled with reason `client_disconnected` once no
 * subscriber has been connected to it for a grace period. A reconnect inside the grace
 * period keeps it running. Runs with `on_disconnect: "continue"` (the default) are never watched.
 */
export class DisconnectWatch {
  readonly #graceMs: number;
  readonly #onExpired: (tenantId: string, runId: string) => void;
  readonly #timers: Timers;
  readonly #watched = new Map<string, WatchedRun>();

  constructor(graceMs: number, onExpired: (tenantId: string, runId: string) => void, timers: Timers = systemTimers) {
    this.#graceMs = graceMs;
    this.#onExpired = onExpired;
    this.#timers = timers;
  }

  static #key(tenantId: string, runId: string): string {
    return `${tenantId}\u0000${runId}`;
  }

  /** Starts watching a run; the grace period runs until its first subscriber connects. */
  watch(tenantId: string, runId: string): void {
    const key = DisconnectWatch.#key(tenantId, runId);
    if (this.#watched.has(key)) return;
    const entry: WatchedRun = { subscribers: 0, timer: undefined };
    this.#watched.set(key, entry);
    this.#arm(tenantId, runId, entry);
  }

  /** A subscriber connected; returns the function to call when it disconnects. */
  attach(tenantId: string, runId: string): () => void {
    const entry = this.#watched.get(DisconnectWatch.#key(tenantId, runId));
    if (!entry) return () => {};
    entry.subscribers++;
    this.#timers.clear(entry.timer);
    entry.timer = undefined;
    let isDetached = false;
    return () => {
      if (isDetached) return;
      isDetached = true;
      entry.subscribers--;
      if (entry.subscribers === 0) this.#arm(tenantId, runId, entry);
    };
  }

  /** Stops watching a run (it ended). */
  forget(tenantId: string, runId: string): void {
    const key = DisconnectWatch.#key(tenantId, runId);
    this.#timers.clear(this.#watched.get(key)?.timer);
    this.#watched.delete(key);
  }

  /** Stops every timer. */
  clear(): void {
    for (const entry of this.#watched.values()) this.#timers.clear(entry.timer);
    this.#watched.clear();
  }

  #arm(tenantId: string, runId: string, entry: WatchedRun): void {
    this.#timers.clear(entry.timer);
    entry.timer = this.#timers.setTimeout(() => {
      entry.timer = undefined;
      if (entry.subscribers === 0 && this.#watched.get(DisconnectWatch.#key(tenantId, runId)) === entry) {
        this.forget(tenantId, runId);
        this.#onExpired(tenantId, runId);
      }
    }, this.#graceMs);
  }
}
