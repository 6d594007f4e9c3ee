import type { ThreadRecord } from "../core/index.js";

export { CancelRequestedError } from "./cancel-requested-error.js";

/** The details of a 409 state_version_conflict: where the thread is, and what the client may do. */
export function conflictDetails(thread: ThreadRecord): Record<string, unknown> {
  return {
    current_checkpoint_id: thread.headCheckpointId,
    current_state_version: thread.stateVersion,
    allowed_actions: ["reload", `fork_from_${thread.headCheckpointId}`],
  };
}
