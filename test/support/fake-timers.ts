/**
 * Fake time for the runtime's timer and clock ports: nothing fires until the test calls
 * `advance(ms)`, which moves the clock and fires the due timers in order (by due time, then by
 * the order they were set), letting the promise work each one starts settle before the next.
 */
import type { Clock, TimerHandle, Timers } from "../../src/core/index.js";

/** A timer waiting on fake time. */
export interface PendingTimer {
  /** The delay it was set with (an interval's period). */
  readonly ms: number;
  /** When it fires next, on the fake clock. */
  readonly dueAt: number;
  readonly isInterval: boolean;
}

export interface FakeTime {
  readonly clock: Clock;
  readonly timers: Timers;
  now(): number;
  /** Moves the clock `ms` ahead, firing every timer due by then, in order. */
  advance(ms: number): Promise<void>;
  /** The timers waiting now, soonest first. */
  pending(): PendingTimer[];
  /** Resolves once a timer matching `predicate` is pending (one already pending counts). */
  whenScheduled(predicate?: (timer: PendingTimer) => boolean): Promise<PendingTimer>;
}

interface Entry extends PendingTimer {
  dueAt: number;
  readonly order: number;
  readonly callback: () => void;
}

/** Lets the promise chains a fired timer started run, so the timers they set are pending. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Creates fake time starting at `start` (ms since the epoch). */
export function createFakeTime(start = Date.UTC(2030, 0, 1)): FakeTime {
  let now = start;
  let order = 0;
  const entries = new Set<Entry>();
  const watchers = new Set<{ predicate: (timer: PendingTimer) => boolean; resolve: (timer: PendingTimer) => void }>();
  const view = (entry: Entry): PendingTimer => ({ ms: entry.ms, dueAt: entry.dueAt, isInterval: entry.isInterval });
  const pending = () => [...entries].sort((a, b) => a.dueAt - b.dueAt || a.order - b.order);

  const add = (callback: () => void, ms: number, isInterval: boolean): TimerHandle => {
    const entry: Entry = { ms, dueAt: now + Math.max(0, ms), isInterval, order: order++, callback };
    entries.add(entry);
    for (const watcher of watchers) {
      if (!watcher.predicate(view(entry))) continue;
      watchers.delete(watcher);
      watcher.resolve(view(entry));
    }
    return entry;
  };

  const timers: Timers = {
    setTimeout: (callback, ms) => add(callback, ms, false),
    setInterval: (callback, ms) => add(callback, ms, true),
    clear: (handle) => {
      entries.delete(handle as Entry);
    },
  };

  return {
    clock: { now: () => now },
    timers,
    now: () => now,
    async advance(ms) {
      const target = now + ms;
      await settle();
      for (let next = pending()[0]; next && next.dueAt <= target; next = pending()[0]) {
        now = next.dueAt;
        if (next.isInterval) next.dueAt += Math.max(1, next.ms);
        else entries.delete(next);
        next.callback();
        await settle();
      }
      now = target;
    },
    pending: () => pending().map(view),
    whenScheduled(predicate = () => true) {
      const found = pending().find((entry) => predicate(view(entry)));
      if (found) return Promise.resolve(view(found));
      return new Promise((resolve) => watchers.add({ predicate, resolve }));
    },
  };
}
