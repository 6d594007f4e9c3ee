/**
 * One interval that paces every run of the many-streams benchmark: a period is cut into slots,
 * each run waits on its own slot, and the interval wakes one slot per tick. So 10,000 runs at one
 * chunk a second cost one timer, and their chunks come evenly spread over the second instead of
 * in bursts (as many independent upstream connections would deliver them).
 */
export class SharedPacer {
  readonly #slots: Set<() => void>[];
  readonly #interval: NodeJS.Timeout;
  #tick = 0;
  #nextSlot = 0;

  constructor(periodMs: number, slotCount: number) {
    this.#slots = Array.from({ length: slotCount }, () => new Set<() => void>());
    this.#interval = setInterval(() => this.#wakeSlot(), periodMs / slotCount);
  }

  /** The slot for a new run (round robin, so the runs spread over the period). */
  takeSlot(): number {
    const slot = this.#nextSlot;
    this.#nextSlot = (this.#nextSlot + 1) % this.#slots.length;
    return slot;
  }

  /** Resolves at `slot`'s next tick; rejects with the signal's reason when it aborts first. */
  wait(slot: number, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    return new Promise<void>((resolve, reject) => {
      const wake = (): void => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.#slots[slot]!.delete(wake);
        reject(signal.reason as Error);
      };
      this.#slots[slot]!.add(wake);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  #wakeSlot(): void {
    const slot = this.#slots[this.#tick]!;
    this.#tick = (this.#tick + 1) % this.#slots.length;
    const wakers = [...slot];
    slot.clear();
    for (const wake of wakers) wake();
  }

  stop(): void {
    clearInterval(this.#interval);
  }
}
