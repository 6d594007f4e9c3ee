/**
 * Cancels for client-named runs that do not exist yet: a Stop pressed before the create's reply
 * arrived is remembered for a short time and applied when the create lands.
 */
export class PendingCancels {
  readonly #entries = new Map<string, { reason: string; expiresAt: number }>();
  readonly #ttlMs: number;
  readonly #maxEntries: number;

  constructor(options: { ttlMs?: number; maxEntries?: number } = {}) {
    this.#ttlMs = options.ttlMs ?? 60_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
  }

  static #key(tenantId: string, runId: string): string {
    return `${tenantId}\u0000${runId}`;
  }

  /** Remembers a cancel for `runId` until it is created or the entry expires. */
  remember(tenantId: string, runId: string, reason: string, now: number): void {
    const key = PendingCancels.#key(tenantId, runId);
    // A repeated Stop moves to the end, so insertion order stays expiry order (prune relies on it).
    this.#entries.delete(key);
    this.#prune(now);
    // Bounded: the oldest entry makes room (Map iterates in insertion order).
    if (this.#entries.size >= this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { reason, expiresAt: now + this.#ttlMs });
  }

  /** The remembered cancel's reason, removing it; undefined if none is pending. */
  take(tenantId: string, runId: string, now: number): string | undefined {
    const key = PendingCancels.#key(tenantId, runId);
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    return entry.expiresAt >= now ? entry.reason : undefined;
  }

  #prune(now: number): void {
    for (const [key, entry] of this.#entries) {
      if (entry.expiresAt >= now) break;
      this.#entries.delete(key);
    }
  }
}
