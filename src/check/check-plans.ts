/**
 * The plan half of `tidemark check` (invariants 9 to 12, docs/invariants.md): a run's steps end
 * with it, a completed step's work is durable through its checkpoint, a step whose dependency did
 * not complete never started, and no step completes after its run's cancel was accepted.
 *
 * A step carried over by a Continue (`reusedFromRunId`) did its work in an earlier run: its
 * checkpoint is that run's, and it is neither started nor fenced by the run that reused it.
 */
import {
  isTerminalStatus,
  TERMINAL_STEP_STATUSES,
  type RunRecord,
  type RunStepRecord,
} from "../core/index.js";
import type { FindCheckpoint, Located } from "./violation.js";

/** Every violation of invariants 9 to 12 among the steps of one thread's runs, ordered by invariant. */
export function checkPlans(runs: readonly RunRecord[], steps: readonly RunStepRecord[], find: FindCheckpoint): Located[] {
  const runsById = new Map(runs.map((run) => [run.runId, run]));
  const stepsByKey = new Map(steps.map((step) => [stepKey(step.runId, step.stepId), step]));
  return [
    ...steps.flatMap((step) => checkEndedWithRun(step, runsById.get(step.runId))),
    ...steps.flatMap((step) => checkDurable(step, find)),
    ...steps.flatMap((step) => checkDependencies(step, (stepId) => stepsByKey.get(stepKey(step.runId, stepId)))),
    ...steps.flatMap((step) => checkCancelFence(step, runsById.get(step.runId), find)),
  ];
}

function stepKey(runId: string, stepId: string): string {
  return JSON.stringify([runId, stepId]);
}

/** Where a step's violation of `invariant` is. */
function at(invariant: number, step: RunStepRecord): Omit<Located, "detail"> {
  return { invariant, runId: step.runId, stepId: step.stepId };
}

/** Invariant 9: a terminal run shows no unfinished step (its end closes them). */
function checkEndedWithRun(step: RunStepRecord, run: RunRecord | undefined): Located[] {
  if (!run || !isTerminalStatus(run.status) || TERMINAL_STEP_STATUSES.includes(step.status)) return [];
  return [{ ...at(9, step), detail: `run ${run.runId} is ${run.status} but its step ${step.stepId} is ${step.status}` }];
}

/**
 * Invariant 10: a completed step has the checkpoint that made its work durable, in the thread's
 * lineage; for a step that did its own work, that checkpoint records this step.
 */
function checkDurable(step: RunStepRecord, find: FindCheckpoint): Located[] {
  if (step.status !== "completed") return [];
  const name = `completed step ${step.stepId} of run ${step.runId}`;
  if (step.checkpointId === null) return [{ ...at(10, step), detail: `${name} has no checkpoint` }];
  const located = { ...at(10, step), checkpointId: step.checkpointId };
  const checkpoint = find(step.checkpointId);
  if (!checkpoint) {
    const reused = step.reusedFromRunId === null ? "" : ` (reused from run ${step.reusedFromRunId})`;
    return [{ ...located, detail: `${name}${reused} points at checkpoint ${step.checkpointId}, which is not in the thread's lineage` }];
  }
  if (step.reusedFromRunId === null && checkpoint.completedStepId !== step.stepId) {
    const recorded = checkpoint.completedStepId === null ? "no step" : `step ${checkpoint.completedStepId}`;
    return [{ ...located, detail: `${name} points at checkpoint ${checkpoint.checkpointId}, which completes ${recorded}` }];
  }
  return [];
}

/**
 * Invariant 11: a step whose dependency ended without completing (`cancelled` or `failed`) never
 * started: no start time and not completed, unless a Continue carried it over.
 */
function checkDependencies(step: RunStepRecord, stepOf: (stepId: string) => RunStepRecord | undefined): Located[] {
  const isStarted = step.startedAt !== null || step.status === "completed";
  if (!isStarted || step.reusedFromRunId !== null) return [];
  const found: Located[] = [];
  for (const dependencyId of step.dependsOn) {
    const dependency = stepOf(dependencyId);
    if (dependency?.status !== "cancelled" && dependency?.status !== "failed") continue;
    const what = step.status === "completed" ? "completed" : "started";
    found.push({
      ...at(11, step),
      detail: `step ${step.stepId} of run ${step.runId} ${what}, but its dependency ${dependencyId} ended ${dependency.status}`,
    });
  }
  return found;
}

/**
 * Invariant 12: a step's own work is recorded by a checkpoint of its own run, and never after the
 * run's cancel was accepted.
 */
function checkCancelFence(step: RunStepRecord, run: RunRecord | undefined, find: FindCheckpoint): Located[] {
  const checkpoint = step.checkpointId === null || step.reusedFromRunId !== null ? undefined : find(step.checkpointId);
  // A missing checkpoint is invariant 10's finding.
  if (!checkpoint) return [];
  const located = { ...at(12, step), checkpointId: checkpoint.checkpointId };
  if (checkpoint.runId !== step.runId) {
    const owner = checkpoint.runId === null ? "no run" : `run ${checkpoint.runId}`;
    return [{ ...located, detail: `step ${step.stepId} of run ${step.runId} points at checkpoint ${checkpoint.checkpointId} of ${owner}, not its own` }];
  }
  const cancelVersion = run?.cancelStateVersion ?? null;
  if (cancelVersion === null || checkpoint.stateVersion < cancelVersion) return [];
  return [
    {
      ...located,
      detail:
        `run ${step.runId} recorded step ${step.stepId} at v${checkpoint.stateVersion}, ` +
        `after its cancel was accepted at v${cancelVersion}`,
    },
  ];
}
