/**
 * The timer source of the runtime's waits (event buffer TTL, disconnect grace, lease heartbeat and
 * recovery sweep). It is a port, like {@link Clock}, so tests run those waits on fake time.
 */

/** A scheduled callback, opaque to its holder; pass it to {@link Timers.clear}. */
export type TimerHandle = object;

/** `setTimeout` / `setInterval` / `clearTimeout`, as a port. */
export interface Timers {
  /** Calls `callback` once, `ms` from now. */
  setTimeout(callback: () => void, ms: number): TimerHandle;
  /** Calls `callback` every `ms` until cleared. */
  setInterval(callback: () => void, ms: number): TimerHandle;
  /** Cancels a timer; a cleared, fired or undefined handle is ignored. */
  clear(handle: TimerHandle | undefined): void;
}

/**
 * The process's timers, unref'd: a pending TTL or heartbeat never keeps the process alive, so
 * shutting down is never a wait for the longest timer.
 */
export const systemTimers: Timers = {
  setTimeout(callback, ms) {
    return setTimeout(callback, ms).unref();
  },
  setInterval(callback, ms) {
    return setInterval(callback, ms).unref();
  },
  clear(handle) {
    clearTimeout(handle as NodeJS.Timeout | undefined);
  },
};
