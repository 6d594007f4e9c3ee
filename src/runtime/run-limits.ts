/** What one tenant may hold at once in this deployment (docs/reliability.md, "Limits"); `Infinity` turns a limit off. */
export interface RunLimits {
  /** Unfinished runs of one tenant that are not waiting behind another run (default 10,000). */
  maxActiveRunsPerTenant: number;
  /** Runs of one tenant waiting behind another run of their thread (`multitask: "enqueue"`; default 10,000). */
  maxQueuedRunsPerTenant: number;
  /** The longest input message, in characters (default 200,000). */
  maxInputChars: number;
  /** Open event streams of one tenant in this process, every layer's together (default 20,000). */
  maxStreamsPerTenant: number;
  /** Open event streams of one run in this process (default 100). */
  maxStreamsPerRun: number;
}

export const DEFAULT_RUN_LIMITS: RunLimits = {
  maxActiveRunsPerTenant: 10_000,
  maxQueuedRunsPerTenant: 10_000,
  maxInputChars: 200_000,
  maxStreamsPerTenant: 20_000,
  maxStreamsPerRun: 100,
};
