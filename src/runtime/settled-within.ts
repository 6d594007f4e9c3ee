import { abortableDelay } from "../core/abortable-delay.js";

/** How long `close()` waits for runs to settle beyond the shield timeout (their final writes). */
export const CLOSE_SETTLE_MS = 5_000;

/** Whether every task settled within `timeoutMs`; never rejects, and leaves no timer behind. */
export async function settledWithin(tasks: readonly Promise<unknown>[], timeoutMs: number): Promise<boolean> {
  const waiter = new AbortController();
  const all = Promise.allSettled(tasks).then(() => true);
  const late = abortableDelay(timeoutMs, waiter.signal).then(
    () => false,
    () => true,
  );
  try {
    return await Promise.race([all, late]);
  } finally {
    waiter.abort();
  }
}
