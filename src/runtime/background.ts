import type { Logger } from "../core/logger.js";

/**
 * Runs `task` without awaiting it, reporting a rejection instead of losing it: the one way
 * background work starts (STYLE §11).
 */
export function runInBackground(logger: Logger, what: string, task: () => Promise<unknown>): void {
  task().catch((error: unknown) => {
    logger.error({ what, error: error instanceof Error ? error.stack : String(error) }, "background task failed");
  });
}
