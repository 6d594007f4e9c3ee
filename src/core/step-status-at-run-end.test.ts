import { describe, expect, it } from "vitest";
import type { StepStatus, TerminalRunStatus } from "./index.js";
import { stepStatusAtRunEnd, UNFINISHED_STEP_STATUSES } from "./step-status-at-run-end.js";

/** [the step's status, the run's end, the step's status after it]. */
const TABLE: [StepStatus, TerminalRunStatus, StepStatus][] = [
  ["not_started", "completed", "cancelled"],
  ["not_started", "cancelled", "cancelled"],
  ["not_started", "failed", "cancelled"],
  ["in_progress", "completed", "cancelled"],
  ["in_progress", "cancelled", "cancelled"],
  ["in_progress", "failed", "failed"],
  ["children_in_progress", "completed", "cancelled"],
  ["children_in_progress", "cancelled", "cancelled"],
  ["children_in_progress", "failed", "failed"],
  ["completed", "cancelled", "completed"],
  ["completed", "failed", "completed"],
  ["failed", "completed", "failed"],
  ["failed", "cancelled", "failed"],
  ["cancelled", "failed", "cancelled"],
  ["cancelled", "completed", "cancelled"],
];

describe("stepStatusAtRunEnd", () => {
  it.each(TABLE)("a %s step of a run that ends %s is %s", (step, run, after) => {
    expect(stepStatusAtRunEnd(step, run)).toBe(after);
  });

  it("closes exactly the unfinished statuses", () => {
    const all: StepStatus[] = ["not_started", "in_progress", "children_in_progress", "completed", "failed", "cancelled"];
    const closed = all.filter((step) => stepStatusAtRunEnd(step, "cancelled") !== step);
    expect(closed).toEqual(UNFINISHED_STEP_STATUSES);
  });
});
