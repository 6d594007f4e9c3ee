/**
 * What a run's end does to the steps of its plan that have not ended (DESIGN §11): a terminal run
 * never shows an unfinished step. The store applies it wherever a run becomes terminal with its
 * steps recorded; it is a pure function so that the rule lives once and is tested as a table.
 */
import { TERMINAL_STEP_STATUSES, type StepStatus } from "./records.js";
import type { TerminalRunStatus } from "./run-status.js";

/** The step statuses a run's end closes: every status that is not terminal. */
export const UNFINISHED_STEP_STATUSES: readonly StepStatus[] = ["not_started", "in_progress", "children_in_progress"];

/**
 * The status a step in `step` takes when its run ends as `run`: a terminal step keeps its own; a
 * step that was working fails with a failed run; every other one is `cancelled` (it never started,
 * or its run ended without it).
 */
export function stepStatusAtRunEnd(step: StepStatus, run: TerminalRunStatus): StepStatus {
  if (TERMINAL_STEP_STATUSES.includes(step)) return step;
  const wasWorking = step === "in_progress" || step === "children_in_progress";
  return run === "failed" && wasWorking ? "failed" : "cancelled";
}
