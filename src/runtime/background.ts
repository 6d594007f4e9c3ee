import type { Logger } from "../core/logger.js";

/**
 * Runs `task` without awaiting it, reporting a rejection instead of losing it: the one way
 * background work starts (STYLE §11). `fields` name what the task is about (a run's
 * `run_id`, `thread_id`, `tenant_id`) on the line that reports its failure.
 */
export function runInBackground(logger: Logger, what: string, task: () => Promise<unknown>, fields: Record<string, unknown> = {}): void {
  task().catch((error: unknown) => {
    logger.error({ ...fields, what, error: error instanceof Error ? error.stack : String(error) }, "background task failed");
  });
}
