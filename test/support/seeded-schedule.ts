/**
 * The random part of a race suite (when a cancel or a SIGKILL lands) drawn by fast-check from one
 * seed: a failure names its seed, and `TIDEMARK_SEED=<seed> npx vitest run <file>` replays the same
 * schedule. One run per test: each draws a whole schedule of many rounds, and real processes and
 * accumulated state make shrinking meaningless, so the first failure ends it.
 */
import fc from "fast-check";

/** The seed to replay from the environment, else a fresh one. */
export function raceSeed(): number {
  const fromEnv = process.env.TIDEMARK_SEED;
  if (fromEnv === undefined || fromEnv === "") return Date.now() ^ Math.floor(Math.random() * 0x1_0000_0000);
  const seed = Number(fromEnv);
  if (!Number.isInteger(seed)) throw new Error(`TIDEMARK_SEED must be an integer, not ${JSON.stringify(fromEnv)}`);
  return seed;
}

/** Runs `body` once with a schedule drawn from `schedule`; a failure says how to replay it. */
export async function withSeededSchedule<T>(schedule: fc.Arbitrary<T>, body: (drawn: T) => Promise<void>): Promise<void> {
  const seed = raceSeed();
  try {
    await fc.assert(
      fc.asyncProperty(schedule, async (drawn) => {
        await body(drawn);
      }),
      { seed, numRuns: 1, endOnFailure: true },
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`Replay with TIDEMARK_SEED=${seed}.\n${message}`, { cause: error });
  }
}

/** `count` pauses of 0 to `maxMs` ms: where each round's racing step lands. */
export const pausesMs = (count: number, maxMs: number): fc.Arbitrary<number[]> =>
  fc.array(fc.integer({ min: 0, max: maxMs }), { minLength: count, maxLength: count });

/** Waits `ms`: the injected delay of a race, never a synchronisation. */
export const raceDelay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
