/**
 * Delays in 0.1 ms buckets up to 10 s (the last bucket holds everything longer), so that client
 * processes can each count hundreds of thousands of deliveries and the parent merges their counts
 * into exact-to-0.1-ms percentiles.
 */
const BUCKET_MS = 0.1;
const BUCKETS = 100_000;

/** Non-empty buckets as [index, count] pairs: what a client sends its parent. */
export type SparseCounts = [number, number][];

export class DelayHistogram {
  readonly #counts = new Uint32Array(BUCKETS);
  #total = 0;

  /** Counts one delay (a negative one, clock skew within the offset's error, counts as 0). */
  add(delayMs: number): void {
    const index = Math.min(BUCKETS - 1, Math.max(0, Math.floor(delayMs / BUCKET_MS)));
    this.#counts[index]!++;
    this.#total++;
  }

  get total(): number {
    return this.#total;
  }

  addCounts(sparse: SparseCounts): void {
    for (const [index, count] of sparse) {
      this.#counts[index]! += count;
      this.#total += count;
    }
  }

  toSparse(): SparseCounts {
    const sparse: SparseCounts = [];
    for (let index = 0; index < BUCKETS; index++) if (this.#counts[index]! > 0) sparse.push([index, this.#counts[index]!]);
    return sparse;
  }

  /** The upper edge of the bucket holding the `p`-th percentile (nearest rank), ms; NaN when empty. */
  percentile(p: number): number {
    if (this.#total === 0) return Number.NaN;
    const rank = Math.max(1, Math.ceil((p / 100) * this.#total));
    let seen = 0;
    for (let index = 0; index < BUCKETS; index++) {
      seen += this.#counts[index]!;
      if (seen >= rank) return (index + 1) * BUCKET_MS;
    }
    return BUCKETS * BUCKET_MS;
  }

  reset(): void {
    this.#counts.fill(0);
    this.#total = 0;
  }
}
