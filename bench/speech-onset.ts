/** Where speech begins in a recording, found from its samples alone. */

/**
 * The onset rule: the first window of `windowMs` (sliding, sample by sample) whose RMS exceeds
 * `rmsThreshold` (full scale 1; 0.01 is −40 dBFS) holds the onset, at its first sample whose
 * amplitude exceeds the same threshold. The window keeps a click from counting; the sample keeps
 * the window's silent lead-in out of the onset.
 */
export const ONSET_RULE = { windowMs: 10, rmsThreshold: 0.01 } as const;

/** The onset of `samples` (at `rate` Hz) by `rule`, in ms from the first sample; null when there is none. */
export function speechOnsetMs(samples: ArrayLike<number>, rate: number, rule: { windowMs: number; rmsThreshold: number } = ONSET_RULE): number | null {
  const size = Math.round((rate * rule.windowMs) / 1000);
  // Prefix sums of squares: each window's energy in O(1), without a running sum's drift.
  const energy = new Float64Array(samples.length + 1);
  for (let index = 0; index < samples.length; index++) energy[index + 1] = energy[index]! + samples[index]! ** 2;
  const limit = rule.rmsThreshold ** 2 * size;
  for (let start = 0; start + size <= samples.length; start++) {
    if (energy[start + size]! - energy[start]! <= limit) continue;
    // A window above the RMS threshold has a sample above it.
    let onset = start;
    while (Math.abs(samples[onset]!) <= rule.rmsThreshold) onset++;
    return (onset / rate) * 1000;
  }
  return null;
}
