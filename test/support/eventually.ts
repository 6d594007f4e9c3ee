/**
 * `eventually(check)`: for state another process or a store holds, where no event reaches the
 * test. It re-runs `check` until it passes (returns without throwing) and returns its value. The
 * deadline is only a guard against a hang: a test never relies on it, and a failure names what was
 * awaited and the last error `check` threw.
 */

export interface EventuallyOptions {
  /** What is awaited, for the failure message. */
  what?: string;
  /** The failure guard (default 30 s: generous, so a loaded machine never trips it). */
  timeoutMs?: number;
  /** The pause between two checks (default 20 ms); not a synchronisation, only a politeness. */
  intervalMs?: number;
}

/** Re-runs `check` until it passes; its value. */
export async function eventually<T>(check: () => T | Promise<T>, options: EventuallyOptions = {}): Promise<T> {
  const { what = "the condition", timeoutMs = 30_000, intervalMs = 20 } = options;
  const deadline = performance.now() + timeoutMs;
  let attempts = 0;
  for (;;) {
    attempts++;
    try {
      return await check();
    } catch (error) {
      if (performance.now() > deadline) {
        const last = error instanceof Error ? error.message : String(error);
        throw new Error(`${what} did not happen within ${timeoutMs} ms (${attempts} checks); the last check said: ${last}`, { cause: error });
      }
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
