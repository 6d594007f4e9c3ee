import type { ThreadRecord } from "../core/index.js";

/** A cancel's reason as the abort reason of a run's scope. */
export class CancelRequestedError extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(`cancel requested: ${reason}`);
    this.name = "AbortError";
    this.reason = reason;
  }
}

/** The details of a 409 state_version_conflict: where the thread is, and what the client may do. */
export function conflictDetails(thread: ThreadRecord): Record<string, unknown> {
  return {
    current_checkpoint_id: thread.headCheckpointId,
    current_state_version: thread.stateVersion,
    allowed_actions: ["reload", `fork_from_${thread.headCheckpointId}`],
  };
}
