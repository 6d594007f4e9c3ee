import { describe, expect, it } from "vitest";
import type { RunEvent } from "../core/run-event.js";
import { applyPlanEvent, applyRunSteps, emptyPlan, mergeStep, planForRun, type PlanState, type PlanStep } from "./plan-state.js";
import type { StepStatusView, StepView } from "./wire-types.js";

const RUN_ID = "run_01jd8x0f1ae2rbv7c9ks0d8m5q";
let seq = 0;

const stepEvent = (stepId: string, status: StepStatusView, fields: Partial<Extract<RunEvent, { type: "step.updated" }>> = {}): RunEvent => ({
  type: "step.updated",
  run_id: RUN_ID,
  seq: ++seq,
  step_id: stepId,
  status,
  depends_on: [],
  title: stepId,
  parent_step_id: null,
  checkpoint_id: null,
  reused: false,
  ...fields,
});

const stepView = (stepId: string, status: StepStatusView, fields: Partial<StepView> = {}): StepView => ({
  step_id: stepId,
  status,
  depends_on: [],
  parent_step_id: null,
  title: stepId,
  started_at: null,
  ended_at: null,
  checkpoint_id: null,
  message_id: null,
  result: null,
  reused_from_run_id: null,
  error: null,
  ...fields,
});

const step = (status: StepStatusView, fields: Partial<PlanStep> = {}): PlanStep => ({
  stepId: "s",
  status,
  title: null,
  dependsOn: [],
  parentStepId: null,
  hasStarted: false,
  isOwnWorkDone: false,
  isReused: false,
  reusedFromRunId: null,
  checkpointId: null,
  messageId: null,
  error: null,
  ...fields,
});

const statuses = (plan: PlanState) => plan.steps.map((entry) => `${entry.stepId}:${entry.status}`);

describe("a run's plan on the client", () => {
  // A status moves only forward; a terminal one is sticky (a replayed stream, a stale read).
  it.each([
    ["not_started", "in_progress", "in_progress"],
    ["in_progress", "children_in_progress", "children_in_progress"],
    ["in_progress", "completed", "completed"],
    ["in_progress", "not_started", "in_progress"],
    ["children_in_progress", "in_progress", "children_in_progress"],
    ["completed", "in_progress", "completed"],
    ["completed", "cancelled", "completed"],
    ["cancelled", "completed", "cancelled"],
    ["cancelled", "not_started", "cancelled"],
    ["failed", "in_progress", "failed"],
  ] as const)("%s then %s is %s", (from, seen, expected) => {
    expect(mergeStep(step(from), step(seen)).status).toBe(expected);
  });

  it("keeps the same object when nothing changes", () => {
    const known = step("completed", { hasStarted: true, checkpointId: "cp_1" });
    expect(mergeStep(known, step("in_progress", { hasStarted: true }))).toBe(known);
  });

  it("builds the plan from events, in the order the steps were planned", () => {
    seq = 0;
    const plan = [
      stepEvent("plan", "not_started"),
      stepEvent("plan", "in_progress"),
      stepEvent("subtask-1", "not_started"),
      stepEvent("subtask-2", "not_started"),
      stepEvent("plan", "completed", { checkpoint_id: "cp_plan" }),
      stepEvent("subtask-1", "in_progress"),
    ].reduce(applyPlanEvent, emptyPlan(RUN_ID, "research"));
    expect(statuses(plan)).toEqual(["plan:completed", "subtask-1:in_progress", "subtask-2:not_started"]);
    expect(plan.steps[0]).toMatchObject({ hasStarted: true, isOwnWorkDone: true, checkpointId: "cp_plan" });
    expect(plan.steps[1]).toMatchObject({ hasStarted: true, isOwnWorkDone: false });
  });

  it("tells a step cut in progress from one that never started", () => {
    seq = 0;
    const plan = [
      stepEvent("subtask-1", "not_started"),
      stepEvent("subtask-2", "not_started"),
      stepEvent("subtask-1", "in_progress"),
      { type: "run.cancelling", run_id: RUN_ID, seq: ++seq, active_operation: null, steps: ["subtask-1"] } as RunEvent,
      stepEvent("subtask-2", "cancelled"),
      stepEvent("subtask-1", "cancelled"),
    ].reduce(applyPlanEvent, emptyPlan(RUN_ID));
    expect(plan.steps.map((entry) => [entry.stepId, entry.status, entry.hasStarted])).toEqual([
      ["subtask-1", "cancelled", true],
      ["subtask-2", "cancelled", false],
    ]);
    expect(plan.finishing).toEqual(["subtask-1"]);
  });

  it("ignores another run's events", () => {
    const plan = emptyPlan("run_other");
    expect(applyPlanEvent(plan, stepEvent("plan", "in_progress"))).toBe(plan);
  });

  it("takes the server's rows: start times, reuse and order, without moving a status back", () => {
    seq = 0;
    const fromEvents = [stepEvent("b", "not_started"), stepEvent("a", "in_progress"), stepEvent("a", "completed", { reused: true })].reduce(
      applyPlanEvent,
      emptyPlan(RUN_ID),
    );
    const read = applyRunSteps(fromEvents, {
      run_id: RUN_ID,
      status: "running",
      steps: [
        stepView("a", "in_progress", { started_at: "2026-01-01T00:00:00Z" }),
        stepView("b", "cancelled", { reused_from_run_id: null }),
        stepView("c", "completed", { started_at: "2026-01-01T00:00:00Z", reused_from_run_id: "run_old", message_id: "msg_c" }),
      ],
    });
    expect(statuses(read)).toEqual(["a:completed", "b:cancelled", "c:completed"]);
    expect(read.steps.map((entry) => [entry.hasStarted, entry.isReused])).toEqual([
      [true, true],
      [false, false],
      [true, true],
    ]);
    expect(read.steps[2]).toMatchObject({ reusedFromRunId: "run_old", messageId: "msg_c" });
    expect(read.runStatus).toBe("running");
    expect(applyRunSteps(read, { run_id: "run_other", status: "running", steps: [] })).toBe(read);
  });

  it("starts a new plan for a new run and keeps the current one for the same run", () => {
    const plan = applyPlanEvent(emptyPlan(RUN_ID), stepEvent("a", "in_progress"));
    expect(planForRun(plan, RUN_ID, null)).toBe(plan);
    expect(planForRun(plan, RUN_ID, "research")).toMatchObject({ agent: "research", steps: plan.steps });
    expect(planForRun(plan, "run_next", "chat")).toEqual(emptyPlan("run_next", "chat"));
  });
});
