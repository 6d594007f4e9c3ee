/**
 * What the runtime needs from other processes when several share one database (DESIGN §14): a
 * way to wake workers, to reach the process executing a run, and to fan its events out to every
 * API process. The embedded default has none: one process does everything.
 */
import type { RunEvent } from "../core/index.js";
import type { EventHub, RunEventBuffer } from "../stream/index.js";

/** A message for the process executing a run; the others ignore it. */
export type ControlMessage =
  /** A cancel the store accepted: what the worker needs to stop the work and tell the stream. */
  | { kind: "cancel"; tenantId: string; runId: string; reason: string; stateVersion: number; checkpointId: string }
  | { kind: "decide"; tenantId: string; runId: string; decision: "approved" | "rejected" };

export interface Cluster {
  /** Wakes the workers: a run was queued. */
  announceQueued(): void;
  /** Delivers a control message to every process (the one executing the run acts on it). */
  sendControl(message: ControlMessage): Promise<void>;
  onControl(listener: (message: ControlMessage) => void): void;
  onQueued(listener: () => void): void;
  /** Appends an event this process emitted to the shared log (batched, in order). */
  publishEvent(tenantId: string, event: RunEvent): void;
  /**
   * Loads a run's events of `attempt` (or later) from the shared log into the hub and keeps
   * following them until the run's terminal event; waits (briefly) until it holds `atLeastSeq`.
   */
  follow(hub: EventHub, tenantId: string, runId: string, attempt: number, atLeastSeq?: number): Promise<RunEventBuffer>;
  /** Stops following a run (this process takes over writing its events). */
  unfollow(tenantId: string, runId: string): void;
  /** Deletes the logs of runs that ended before `before`; how many events were deleted. */
  pruneEvents(before: number): Promise<number>;
  /** Writes the events still pending and closes the connections. */
  close(): Promise<void>;
}
