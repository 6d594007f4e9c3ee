/** Order statistics for benchmark samples (the machine is shared and noisy: quote medians and tails). */

/** The `p`-th percentile (0–100) of `samples`, by the nearest-rank method; NaN when empty. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** The median of `samples` (the mean of the two middle ones for an even count). */
export function median(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** p50, p90, p99 and max (rounded to 4 decimals), for the JSON details. */
export function summarize(samples: readonly number[]): { count: number; p50: number; p90: number; p99: number; max: number } {
  return {
    count: samples.length,
    p50: round(percentile(samples, 50), 4),
    p90: round(percentile(samples, 90), 4),
    p99: round(percentile(samples, 99), 4),
    max: round(percentile(samples, 100), 4),
  };
}

/** Rounds for display and JSON: three significant decimals are plenty on a noisy machine. */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value)) return value;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
