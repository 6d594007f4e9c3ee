/**
 * Absolute high-resolution time (`performance.timeOrigin + performance.now()`: ms since the Unix
 * epoch at µs resolution), so that times taken in a child process compare with this process's.
 */

/** This process's absolute high-resolution time, comparable with a child's. */
export function absoluteNow(): number {
  return performance.timeOrigin + performance.now();
}

/** How far a child's clock is from this one, and how sure that is. */
export interface ClockOffset {
  /** Child clock − this clock (ms). */
  offsetMs: number;
  /** The round trip it was measured over; the offset is right to ± rttMs / 2. */
  rttMs: number;
}

/**
 * Child clock minus this clock by ping-pong: `ping` returns the child's {@link absoluteNow} when it
 * answered; the offset is that minus the midpoint of the round trip, from the fastest of `pings`.
 */
export async function estimateClockOffset(pings: number, ping: () => Promise<number>): Promise<ClockOffset> {
  let best = { offsetMs: Number.NaN, rttMs: Number.POSITIVE_INFINITY };
  for (let index = 0; index < pings; index++) {
    const sentAt = absoluteNow();
    const childAt = await ping();
    const receivedAt = absoluteNow();
    const rttMs = receivedAt - sentAt;
    if (rttMs < best.rttMs) best = { offsetMs: childAt - (sentAt + receivedAt) / 2, rttMs };
  }
  return best;
}
