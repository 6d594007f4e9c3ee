import { createId, hashJson, type CheckpointRecord, type ConfirmedResults, type MessageRecord, type RunStepRecord } from "../core/index.js";
import type { ModelMessage } from "../core/model.js";
import type { AgentRunContext, AgentStep, PublishedStep } from "../agents/define-agent.js";
import { runPlan, type PlanResult, type StepContext, type StepDefinition } from "./plan.js";
import { PublicationRejectedError } from "./publication-rejected-error.js";
import type { Store } from "../store/index.js";
import type { RunExecution } from "./run-execution.js";
import { endsTheRun } from "./run-stop.js";
import { createStepContext } from "./step-context.js";
import { StepJournal, type StepRecordRef } from "./step-journal.js";

/** What the run's agent starts from: the thread's history, its model context, and the Stop it builds on. */
export interface AgentStart {
  history: readonly MessageRecord[];
  context: readonly ModelMessage[];
  /** The `cancel_accepted` checkpoint the run continues from (see `readStoppedAt`), if any. */
  stopped: CheckpointRecord | undefined;
}

/** A completed step of the stopped run a Continue builds on (or of this run's earlier attempt): reused, never run again. */
interface ReusableStep {
  row: RunStepRecord;
  /** The run whose work it was; null when it is this run's own (an earlier attempt's). */
  reusedFromRunId: string | null;
}

/**
 * Runs the execution's agent as a plan (DESIGN §11): each step in its own child scope of the
 * run's, its status journaled and streamed, its completion made durable by its own checkpoint (a
 * publication, or `step_completed` with its result). A Continue reuses the stopped run's completed
 * steps (same id, same input) instead of running them.
 */
export async function runAgent(execution: RunExecution, start: AgentStart): Promise<PlanResult> {
  const { run, agent } = execution;
  const context: AgentRunContext = {
    runId: run.runId,
    threadId: run.threadId,
    config: execution.config,
    input: start.context.findLast((message) => message.role === "user")?.content ?? "",
    messages: start.context,
    tools: execution.toolDefinitions.map((tool) => ({ ...tool, effect: execution.tools.get(tool.name)?.effect ?? "none" })),
  };
  const reusable = agent.continuesFromHistory ? new Map<string, ReusableStep>() : await reusableSteps(execution, start.stopped);
  const messages = new Map(start.history.map((message) => [message.messageId, message]));
  // The result sets the Stop this run continues from confirmed: a repeated step says how its new set differs.
  const confirmed = new Map((start.stopped?.cancelledGeneration?.confirmedResults ?? []).map((set) => [set.stepId, set]));
  const journal = new StepJournal({
    run: () => execution.run,
    store: execution.store,
    clock: execution.clock,
    logger: execution.logger,
    emit: execution.emit,
    isEnding: () => endsTheRun(execution.stop.state),
  });
  execution.steps = journal;

  const wrap = (step: AgentStep, parentStepId: string | null): StepDefinition => {
    const inputHash = step.input === undefined ? null : hashJson(step.input);
    journal.declare({ stepId: step.id, parentStepId, title: step.title ?? null, dependsOn: [...(step.dependsOn ?? [])], inputHash });
    execution.tracing.declareStep(step.id, parentStepId);
    return {
      id: step.id,
      dependsOn: step.dependsOn,
      run: async (plan) => {
        const earlier = reusable.get(step.id);
        const result =
          earlier && earlier.row.inputHash === inputHash ? reuse(journal, earlier, messages) : await runStep(execution, journal, step, plan, context, wrap, messages, confirmed);
        for (const next of step.next?.(result, context) ?? []) plan.addStep(wrap(next, step.id));
        return result;
      },
    };
  };

  try {
    const concurrency = typeof agent.concurrency === "function" ? agent.concurrency(execution.config) : (agent.concurrency ?? 4);
    return await runPlan(
      agent.steps(context).map((step) => wrap(step, null)),
      {
        scope: execution.scope,
        concurrency,
        onStepStatus: (state) => {
          journal.update(state.id, state.status, state.error);
          execution.tracing.stepStatus(state.id, state.status);
        },
      },
    );
  } finally {
    // A Stop's cut steps are written with the run's end (or beside it: the run's row orders the
    // two, and a late row takes the ended run's view); the execution waits for them before it ends
    // (`executeRun`). A drain or a lost lease waits here: another attempt may write these rows next.
    if (!endsTheRun(execution.stop.state)) await journal.flush();
  }
}

/** Runs one step's own work and makes its completion durable; returns its result. */
async function runStep(
  execution: RunExecution,
  journal: StepJournal,
  step: AgentStep,
  plan: StepContext,
  context: AgentRunContext,
  wrap: (step: AgentStep, parentStepId: string | null) => StepDefinition,
  messages: Map<string, MessageRecord>,
  confirmed: ReadonlyMap<string, ConfirmedResults>,
): Promise<unknown> {
  const running = createStepContext(execution, {
    stepId: step.id,
    run: context,
    signal: plan.signal,
    scope: plan.scope,
    result: (stepId) => plan.result(stepId),
    addStep: (child) => plan.addStep(wrap(child, step.id)),
    message: (messageId) => messages.get(messageId),
    confirmedAtStop: confirmed.get(step.id),
    published: (message) => void messages.set(message.messageId, message),
  });
  try {
    const value = await step.run(running.context);
    const record = running.record();
    if (record?.kind === "published") {
      journal.recorded(
        step.id,
        { checkpointId: record.checkpointId, messageId: record.published.messageId, result: null, reusedFromRunId: null },
        record.endedRun,
      );
      return record.published;
    }
    if (record?.kind === "tool") {
      journal.recorded(step.id, { checkpointId: record.checkpointId, messageId: null, result: null, reusedFromRunId: null });
      return record.outcome;
    }
    const completed = await completeStep(execution, journal, step.id, value ?? null, running.generationStats());
    running.keepGenerations();
    return completed;
  } catch (error) {
    // The run stopped being `running` under this step (a cancel recorded elsewhere, or the end):
    // that is the Stop reaching the plan, so the step is cut, not failed, and nothing else starts.
    // A cut step stays among the run's active steps: the cancel's checkpoint names what it caught.
    if (PublicationRejectedError.isInstance(error)) plan.scope.cancel(error);
    throw error;
  }
}

/** A step that returned its result: one transition, a `step_completed` checkpoint. */
async function completeStep(
  execution: RunExecution,
  journal: StepJournal,
  stepId: string,
  value: unknown,
  stats: Parameters<RunExecution["store"]["completeStep"]>[0]["stats"],
): Promise<unknown> {
  const { run, store, clock } = execution;
  const result = JSON.stringify(value);
  const completed = await store.completeStep({
    tenantId: run.tenantId,
    runId: run.runId,
    stepId,
    checkpointId: createId("cp"),
    result,
    attempt: run.attempt,
    ...(stats && Object.keys(stats).length > 0 ? { stats } : {}),
    now: clock.now(),
  });
  if (completed.kind === "rejected") {
    execution.trace("late_output_discarded", { step_id: stepId, chars: result.length });
    throw new PublicationRejectedError(run.runId);
  }
  execution.activeSteps.delete(stepId);
  journal.recorded(stepId, { checkpointId: completed.checkpoint.checkpointId, messageId: null, result, reusedFromRunId: null });
  execution.emit({
    type: "checkpoint.saved",
    run_id: run.runId,
    checkpoint_id: completed.checkpoint.checkpointId,
    state_version: completed.checkpoint.stateVersion,
    kind: completed.checkpoint.kind,
  });
  // The same value a Continue will read back from the store.
  return JSON.parse(result) as unknown;
}

/** A completed step of the stopped run, carried over by reference (no new checkpoint, no model call). */
function reuse(journal: StepJournal, earlier: ReusableStep, messages: ReadonlyMap<string, MessageRecord>): unknown {
  const { row } = earlier;
  const ref: StepRecordRef = { checkpointId: row.checkpointId!, messageId: row.messageId, result: row.result, reusedFromRunId: earlier.reusedFromRunId };
  journal.recorded(row.stepId, ref);
  if (row.messageId !== null) {
    const message = messages.get(row.messageId);
    const published: PublishedStep = { messageId: row.messageId, content: message?.content ?? "", label: message?.label ?? null, format: message?.format ?? "text" };
    return published;
  }
  return row.result === null ? null : (JSON.parse(row.result) as unknown);
}

/**
 * The steps whose own work is already checkpointed: this run's, on a later attempt; else, for a
 * Continue, those of the run whose Stop it builds on (its `cancel_accepted` checkpoint, past
 * fragments, deletions and forks made after it), if that run ran the same agent.
 */
async function reusableSteps(execution: RunExecution, stopped: CheckpointRecord | undefined): Promise<Map<string, ReusableStep>> {
  const { run, store } = execution;
  const reusable = new Map<string, ReusableStep>();
  // A later attempt of this run (its worker was lost and it resumes) keeps what its earlier attempts completed.
  if (run.attempt > 1) {
    for (const row of await store.listRunSteps(run.tenantId, run.runId)) {
      if (row.checkpointId !== null) reusable.set(row.stepId, { row, reusedFromRunId: row.reusedFromRunId });
    }
    return reusable;
  }
  if (run.input !== null) return reusable;
  if (!stopped?.runId) return reusable;
  const earlier = await store.getRun(run.tenantId, stopped.runId);
  if (!earlier || earlier.agent !== run.agent) return reusable;
  for (const row of await store.listRunSteps(run.tenantId, earlier.runId)) {
    // Its own work is durable: reused even if it ended `cancelled` because steps it added were cut.
    if (row.checkpointId !== null) {
      reusable.set(row.stepId, { row, reusedFromRunId: row.reusedFromRunId ?? earlier.runId });
    }
  }
  return reusable;
}

/**
 * The `cancel_accepted` checkpoint a run builds on, looking past the edits a client may make after
 * a Stop (a saved or deleted fragment, a fork); undefined when the base is no Stop.
 */
function stoppedAt(checkpoints: ReadonlyMap<string, CheckpointRecord>, baseCheckpointId: string): CheckpointRecord | undefined {
  return walkToStop(checkpoints, baseCheckpointId).stopped;
}

/** The walk of `stoppedAt`, and whether it needed a checkpoint `checkpoints` does not hold. */
function walkToStop(checkpoints: ReadonlyMap<string, CheckpointRecord>, baseCheckpointId: string): { stopped?: CheckpointRecord; isMissing: boolean } {
  let base = checkpoints.get(baseCheckpointId);
  while (base && (base.kind === "fragment_saved" || base.kind === "message_deleted" || base.kind === "fork_created") && base.parentCheckpointId) {
    const parent = checkpoints.get(base.parentCheckpointId);
    if (!parent) return { isMissing: true };
    base = parent;
  }
  if (!base) return { isMissing: true };
  return { stopped: base.kind === "cancel_accepted" ? base : undefined, isMissing: false };
}

/** How many versions below the run's the Stop it builds on is looked for, before the whole thread is read. */
const RECENT_VERSIONS = 16;

/** The oldest version {@link readStoppedAt} looks at first for a run at `nearVersion`. */
export function recentVersionsFrom(nearVersion: number): number {
  return Math.max(0, nearVersion - RECENT_VERSIONS);
}

/**
 * `stoppedAt` for a run of `threadId` whose base is `baseCheckpointId`, at or below `nearVersion`:
 * it reads the thread's last checkpoints only (a turn's cost must not grow with its thread), and
 * all of them only when the walk reaches further back (many edits after a Stop). `recent`: those
 * last checkpoints (from {@link recentVersionsFrom}), when the caller read them already.
 */
export async function readStoppedAt(
  store: Store,
  tenantId: string,
  threadId: string,
  baseCheckpointId: string,
  nearVersion: number,
  recent?: readonly CheckpointRecord[],
): Promise<CheckpointRecord | undefined> {
  recent ??= await store.listCheckpoints(tenantId, threadId, { fromVersion: recentVersionsFrom(nearVersion) });
  const walk = walkToStop(new Map(recent.map((checkpoint) => [checkpoint.checkpointId, checkpoint])), baseCheckpointId);
  if (!walk.isMissing) return walk.stopped;
  const all = await store.listCheckpoints(tenantId, threadId);
  return stoppedAt(new Map(all.map((checkpoint) => [checkpoint.checkpointId, checkpoint])), baseCheckpointId);
}
