import { TidemarkError } from "../core/index.js";

/**
 * Counts the open event streams of each tenant and run in this process, and refuses one past
 * either limit (`too_many_streams`). Every layer's stream takes its slot before it answers.
 */
export class StreamSlots {
  readonly #perTenant = new Map<string, number>();
  readonly #perRun = new Map<string, number>();

  constructor(readonly limits: { maxStreamsPerTenant: number; maxStreamsPerRun: number }) {}

  /** Takes a slot for a stream of `runId`; returns the function that gives it back (once). */
  take(tenantId: string, runId: string): () => void {
    // Both limits off: nothing to count.
    if (this.limits.maxStreamsPerTenant === Infinity && this.limits.maxStreamsPerRun === Infinity) return RELEASE_NOTHING;
    const runKey = `${tenantId}\u0000${runId}`;
    const tenantCount = this.#perTenant.get(tenantId) ?? 0;
    const runCount = this.#perRun.get(runKey) ?? 0;
    if (tenantCount >= this.limits.maxStreamsPerTenant || runCount >= this.limits.maxStreamsPerRun) {
      const scope = runCount >= this.limits.maxStreamsPerRun ? "run" : "tenant";
      const limit = scope === "run" ? this.limits.maxStreamsPerRun : this.limits.maxStreamsPerTenant;
      throw new TidemarkError("too_many_streams", `This ${scope} already has ${limit} open event streams here; close one, or try again later.`, {
        details: { scope, limit, retry_after_s: 1 },
      });
    }
    this.#perTenant.set(tenantId, tenantCount + 1);
    this.#perRun.set(runKey, runCount + 1);
    let isReleased = false;
    return () => {
      if (isReleased) return;
      isReleased = true;
      decrement(this.#perTenant, tenantId);
      decrement(this.#perRun, runKey);
    };
  }
}

const RELEASE_NOTHING = (): void => {};

function decrement(counts: Map<string, number>, key: string): void {
  const next = (counts.get(key) ?? 1) - 1;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}
