/** Pauses that end early: after their time, when their condition holds at a change, or when `signal` aborts. */
export interface WakeablePauses {
  /** Resolves after `ms`, at the first {@link WakeablePauses.changed} after which `isOver()` holds, or on abort. */
  pause(ms: number, isOver: () => boolean): Promise<void>;
  /** Something changed: ends every pause whose condition now holds. */
  changed(): void;
}

/** Creates {@link WakeablePauses}; `signal` (the owner closing) ends them all. */
export function createWakeablePauses(signal: AbortSignal): WakeablePauses {
  const waiting = new Set<{ isOver(): boolean; end(): void }>();
  return {
    pause: (ms, isOver) =>
      new Promise((resolve) => {
        const entry = {
          isOver,
          end() {
            clearTimeout(timer);
            waiting.delete(entry);
            signal.removeEventListener("abort", entry.end);
            resolve();
          },
        };
        const timer = setTimeout(entry.end, ms);
        waiting.add(entry);
        signal.addEventListener("abort", entry.end, { once: true });
        if (signal.aborted) entry.end();
      }),
    changed() {
      for (const entry of [...waiting]) if (entry.isOver()) entry.end();
    },
  };
}
