/** Where a recording sits inside a capture of it, by cross-correlation (robust to the capture's gain and noise processing). */

/** `samples` at `from` Hz, resampled to `to` Hz by linear interpolation (enough for a correlation peak). */
function resample(samples: ArrayLike<number>, from: number, to: number): Float64Array {
  const out = new Float64Array(Math.floor((samples.length * to) / from));
  for (let index = 0; index < out.length; index++) {
    const position = (index * from) / to;
    const left = Math.floor(position);
    const right = Math.min(left + 1, samples.length - 1);
    out[index] = samples[left]! + (samples[right]! - samples[left]!) * (position - left);
  }
  return out;
}

/**
 * The position, in ms of `capture` (at `rate` Hz), of `reference`'s first sample (at
 * `referenceRate` Hz): the lag, within `minLagMs`–`maxLagMs`, that maximises the normalised
 * correlation of `reference` from `fromMs` for `lengthMs` with the capture. Returns the lag and the
 * correlation there (1 is a perfect match up to gain).
 */
export function audioOffsetMs(
  capture: ArrayLike<number>,
  rate: number,
  reference: ArrayLike<number>,
  referenceRate: number,
  window: { fromMs: number; lengthMs: number; minLagMs: number; maxLagMs: number },
): { offsetMs: number; correlation: number } {
  const source = resample(reference, referenceRate, rate);
  const from = Math.round((window.fromMs * rate) / 1000);
  const length = Math.min(Math.round((window.lengthMs * rate) / 1000), source.length - from);
  let sourceEnergy = 0;
  for (let index = 0; index < length; index++) sourceEnergy += source[from + index]! ** 2;
  let best = { offsetMs: Number.NaN, correlation: -Infinity };
  const minLag = Math.round((window.minLagMs * rate) / 1000);
  const maxLag = Math.round((window.maxLagMs * rate) / 1000);
  for (let lag = minLag; lag <= maxLag; lag++) {
    const start = from + lag;
    if (start < 0 || start + length > capture.length) continue;
    let product = 0;
    let energy = 0;
    for (let index = 0; index < length; index++) {
      const value = capture[start + index]!;
      product += value * source[from + index]!;
      energy += value * value;
    }
    const correlation = energy === 0 ? 0 : product / Math.sqrt(energy * sourceEnergy);
    if (correlation > best.correlation) best = { offsetMs: (lag / rate) * 1000, correlation };
  }
  return best;
}
