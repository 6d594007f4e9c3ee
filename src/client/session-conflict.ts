import { TidemarkApiError } from "./tidemark-api-error.js";
import type { AttemptedAction, ChatConflict } from "./session-state.js";

const FORK_PREFIX = "fork_from_";

/**
 * The session's view of a 409 `state_version_conflict` (another tab moved the thread on), or
 * null for any other error. The server names the ways out in `allowed_actions`: `reload`, and
 * `fork_from_<checkpoint>` for a branch from the point this client built on.
 */
export function conflictFrom(error: unknown, attempted: AttemptedAction): ChatConflict | null {
  if (!TidemarkApiError.isInstance(error) || error.code !== "state_version_conflict") return null;
  const { details } = error;
  const allowedActions = Array.isArray(details.allowed_actions) ? details.allowed_actions.filter((action) => typeof action === "string") : [];
  const fork = allowedActions.find((action) => action.startsWith(FORK_PREFIX));
  return {
    message: error.message,
    currentStateVersion: typeof details.current_state_version === "number" ? details.current_state_version : null,
    currentCheckpointId: typeof details.current_checkpoint_id === "string" ? details.current_checkpoint_id : null,
    allowedActions,
    forkCheckpointId: fork === undefined ? null : fork.slice(FORK_PREFIX.length),
    attempted,
  };
}
