/**
 * A run's plan as the client knows it (DESIGN §11): its steps and their statuses, fed by
 * `step.updated` events and by `GET /v1/runs/{id}/steps` (on load, on reconnect, at the run's
 * end). Both may arrive late or twice (a replayed stream, a read taken before the last event), so
 * every merge only moves a step forward: a status never goes back, and a terminal one is sticky.
 */
import type { RunEvent } from "../core/run-event.js";
import type { RunStatus } from "../core/run-status.js";
import type { RunStepsView, StepStatusView, StepView } from "./wire-types.js";

/** One step of a run's plan. */
export interface PlanStep {
  stepId: string;
  status: StepStatusView;
  title: string | null;
  dependsOn: readonly string[];
  parentStepId: string | null;
  /** The step began its work in this run (seen in progress, or the server has its start time). A cancelled step that never began was never started. */
  hasStarted: boolean;
  /**
   * Its own work was done and checkpointed (it waited for the steps it added, or completed): a
   * step cancelled after that was not cut in its own work.
   */
  isOwnWorkDone: boolean;
  /** A Continue carried its completion over from the stopped run instead of running it again. */
  isReused: boolean;
  /** The run whose work was reused (from `GET …/steps`; null until read, or when not reused). */
  reusedFromRunId: string | null;
  /** The checkpoint of its completion. */
  checkpointId: string | null;
  /** The message it published (a labelled section), when it published one and the server said so. */
  messageId: string | null;
  /** Why it did not complete, in short. */
  error: string | null;
}

/** The plan of one run. */
export interface PlanState {
  runId: string;
  /** The agent running it (null until the run was read). */
  agent: string | null;
  /** In the order they were planned. */
  steps: readonly PlanStep[];
  /** The steps the server named as still finishing after a Stop (`run.cancelling`). */
  finishing: readonly string[];
  /** The run's status as the last `GET …/steps` said (null before one); the session's run state is fresher. */
  runStatus: RunStatus | null;
}

const RANK: Readonly<Record<StepStatusView, number>> = {
  not_started: 0,
  in_progress: 1,
  children_in_progress: 2,
  completed: 3,
  failed: 3,
  cancelled: 3,
};

/** Whether `status` is terminal: nothing moves a step out of it. */
export function isTerminalStepStatus(status: StepStatusView): boolean {
  return RANK[status] === 3;
}

/** An empty plan for `runId`. */
export function emptyPlan(runId: string, agent: string | null = null): PlanState {
  return { runId, agent, steps: [], finishing: [], runStatus: null };
}

/** The plan `plan` for run `runId` with its agent known: the same plan when it is that run's, else a new empty one. */
export function planForRun(plan: PlanState | null, runId: string, agent: string | null): PlanState {
  if (plan?.runId !== runId) return emptyPlan(runId, agent);
  return agent === null || plan.agent === agent ? plan : { ...plan, agent };
}

/** Applies one of the run's events (`step.updated`, `run.cancelling`); other events and other runs' leave it as is. */
export function applyPlanEvent(plan: PlanState, event: RunEvent): PlanState {
  if (event.run_id !== plan.runId) return plan;
  if (event.type === "run.cancelling") return event.steps === undefined ? plan : { ...plan, finishing: event.steps };
  if (event.type !== "step.updated") return plan;
  return mergeSteps(plan, [
    {
      stepId: event.step_id,
      status: event.status,
      title: event.title,
      dependsOn: event.depends_on,
      parentStepId: event.parent_step_id,
      // A cancelled step may never have begun: only the events before it (or the server's start time) can say.
      hasStarted: event.status !== "not_started" && event.status !== "cancelled",
      isOwnWorkDone: event.status === "children_in_progress" || event.status === "completed",
      isReused: event.reused,
      reusedFromRunId: null,
      checkpointId: event.checkpoint_id,
      messageId: null,
      error: null,
    },
  ]);
}

/** Takes a `GET /v1/runs/{id}/steps` reply: its order, and whatever moves a step forward or tells more about it. */
export function applyRunSteps(plan: PlanState, view: RunStepsView): PlanState {
  if (view.run_id !== plan.runId) return plan;
  const read = mergeSteps(plan, view.steps.map(stepFromView));
  const merged = read.runStatus === view.status ? read : { ...read, runStatus: view.status };
  // The server's order is the planned one; steps only an event has named yet stay after it.
  const order = new Map(view.steps.map((step, index) => [step.step_id, index]));
  const steps = [...merged.steps].sort((a, b) => (order.get(a.stepId) ?? Infinity) - (order.get(b.stepId) ?? Infinity));
  return steps.every((step, index) => step === merged.steps[index]) ? merged : { ...merged, steps };
}

function stepFromView(step: StepView): PlanStep {
  return {
    stepId: step.step_id,
    status: step.status,
    title: step.title,
    dependsOn: step.depends_on,
    parentStepId: step.parent_step_id,
    hasStarted: step.started_at !== null,
    isOwnWorkDone: step.checkpoint_id !== null,
    isReused: step.reused_from_run_id !== null,
    reusedFromRunId: step.reused_from_run_id,
    checkpointId: step.checkpoint_id,
    messageId: step.message_id,
    error: step.error,
  };
}

function mergeSteps(plan: PlanState, incoming: readonly PlanStep[]): PlanState {
  let steps: PlanStep[] | undefined;
  for (const step of incoming) {
    const list = steps ?? plan.steps;
    const index = list.findIndex((known) => known.stepId === step.stepId);
    const merged = index === -1 ? step : mergeStep(list[index]!, step);
    if (index !== -1 && merged === list[index]) continue;
    steps ??= [...plan.steps];
    if (index === -1) steps.push(merged);
    else steps[index] = merged;
  }
  return steps === undefined ? plan : { ...plan, steps };
}

/** `known` moved by `seen`: the status only forward (terminal is sticky), facts filled in, flags never unset. */
export function mergeStep(known: PlanStep, seen: PlanStep): PlanStep {
  const isForward = !isTerminalStepStatus(known.status) && RANK[seen.status] >= RANK[known.status];
  const status = isForward ? seen.status : known.status;
  const merged: PlanStep = {
    stepId: known.stepId,
    status,
    title: known.title ?? seen.title,
    dependsOn: known.dependsOn.length > 0 || seen.dependsOn.length === 0 ? known.dependsOn : seen.dependsOn,
    parentStepId: known.parentStepId ?? seen.parentStepId,
    hasStarted: known.hasStarted || seen.hasStarted,
    isOwnWorkDone: known.isOwnWorkDone || seen.isOwnWorkDone,
    isReused: known.isReused || seen.isReused,
    reusedFromRunId: known.reusedFromRunId ?? seen.reusedFromRunId,
    checkpointId: known.checkpointId ?? seen.checkpointId,
    messageId: known.messageId ?? seen.messageId,
    error: known.error ?? seen.error,
  };
  const isSame = (Object.keys(merged) as (keyof PlanStep)[]).every((key) => merged[key] === known[key]);
  return isSame ? known : merged;
}
