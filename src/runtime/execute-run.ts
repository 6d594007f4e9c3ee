import {
  decideSettle,
  type CheckpointRecord,
  endingOf,
  type ExternalEffect,
  type MessageToolCall,
  type OperationPhase,
  type OperationRecord,
  type RunRecord,
  type SettleAction,
  type UsageStats,
  type WorkOutcome,
} from "../core/index.js";
import { buildModelContext, CANCELLED_BEFORE_EXECUTION } from "./model-context.js";
import type { ModelMessage } from "../core/model.js";
import { ModelFailedError } from "./model-failed-error.js";
import { PublicationRejectedError } from "./publication-rejected-error.js";
import { ModelError } from "../core/model-error.js";
import { runLogFields } from "../core/logger.js";
import { AgentDefinitionError } from "../agents/agent-definition-error.js";
import { NotUsableForExecutionError } from "./not-usable-for-execution-error.js";
import { StructuredOutputError } from "./structured-output-error.js";
import { confirmUnknownOperations } from "./operation-confirmation.js";
import { readStoppedAt, recentVersionsFrom, runAgent } from "./run-agent.js";
import { pendingStepOf, type RunExecution } from "./run-execution.js";

/** How a run's execution ended, for the caller's metrics. */
export type ExecutionOutcome = "completed" | "cancelled" | "failed" | "handed_back" | "superseded" | "fenced";

/**
 * Executes a claimed run to its end. The store's status is the authority: whatever the plan
 * reports, the terminal write is a compare-and-set, so a completion that raced an accepted
 * cancel can never publish, and a cancel is reported only once the work has stopped.
 */
export async function executeRun(execution: RunExecution): Promise<ExecutionOutcome> {
  const { run, store } = execution;
  let planError: unknown;
  try {
    // A later attempt follows a lost one, which may have left an action's outcome unknown: ask the
    // tools first, so the model is told what happened (a new run did so when it was created).
    if (run.attempt > 1) await confirmUnknownOperations(execution, run.tenantId, run.threadId);
    const view = await store.readExecutionView(run.tenantId, run.threadId, { checkpointsFromVersion: recentVersionsFrom(run.stateVersion) });
    const { messages: history, operations } = view;
    const stopped = await readStoppedAt(store, run.tenantId, run.threadId, run.baseCheckpointId, run.stateVersion, view.checkpoints);
    const context = buildModelContext(history, { outcomeFor: outcomeFromLedger(operations) });
    noteStoppedResponse(context, stopped);
    const result = await runAgent(execution, { history, context, stopped });
    planError = result.error;
  } catch (error) {
    planError = error;
  }
  // A local Stop aborts the work before the store records it: settle only once that is decided.
  await execution.stop.whenDecided();
  try {
    return await settle(execution, workOutcome(planError), planError);
  } finally {
    // A Stop's step rows not written with the run's end (see `runAgent`) land before the execution ends.
    await execution.steps?.flush();
  }
}

/**
 * Settles the run as `decideSettle` says, reading the store's status before each decision; a
 * compare-and-set that lost a race (or a provider's cancel just recorded) decides again.
 */
async function settle(execution: RunExecution, outcome: WorkOutcome, planError: unknown): Promise<ExecutionOutcome> {
  const { run, store } = execution;
  // A run this process let go of (its lease could not be renewed) is decided without the store,
  // which may well be out of reach: nothing is read or written for it here any more.
  if (execution.stop.state.kind === "fenced") {
    const action = decideSettle({ status: run.status, isSameAttempt: true, stop: execution.stop.state, outcome });
    const settled = await carryOutSettle(execution, run, action, planError);
    if (settled !== "decide_again") return settled;
  }
  if (execution.stop.state.kind === "recorded") {
    // The usual end of a recorded Stop, in one compare-and-set and no read first (what the loop
    // below would decide for a run still `cancel_requested`); anything else is decided there.
    const discarded = discardedStats(execution);
    const finished = await finishCancelled(execution, discarded);
    if (finished) return reportCancelled(execution, finished, discarded);
  }
  for (;;) {
    const current = await store.getRun(run.tenantId, run.runId);
    if (!current) return "failed";
    const action = decideSettle({ status: current.status, isSameAttempt: current.attempt === run.attempt, stop: execution.stop.state, outcome });
    const settled = await carryOutSettle(execution, current, action, planError);
    if (settled !== "decide_again") return settled;
  }
}

async function carryOutSettle(
  execution: RunExecution,
  current: RunRecord,
  action: SettleAction,
  planError: unknown,
): Promise<ExecutionOutcome | "decide_again"> {
  const { run, store, clock } = execution;
  const base = { tenantId: run.tenantId, runId: run.runId, attempt: run.attempt, now: clock.now() };
  switch (action.kind) {
    case "relinquish":
      // Self-fenced (decision 014): the recoverer applies the run's policy once the lease expired.
      return "fenced";
    case "superseded":
      // Recovery gave the run to a new attempt (this worker's lease had expired): it is that
      // attempt's to settle, and this one writes nothing.
      execution.trace("execution_superseded", { attempt: run.attempt, current_attempt: current.attempt, status: current.status });
      return "superseded";
    case "record_provider_cancel":
      // An HTTP 499 means the provider cancelled: record it as a cancel, never as a failure.
      await execution.requestCancel("provider_cancelled");
      return "decide_again";
    case "complete": {
      // Every step is done (e.g. the model-step limit was reached after tool results): complete.
      const completed = await store.finishRun({ ...base, to: "completed", from: ["running"], stats: {} });
      if (!completed) return "decide_again";
      emitTerminal(execution, completed, 0);
      return "completed";
    }
    case "report_completed":
      emitTerminal(execution, current, 0);
      return "completed";
    case "finish_cancelled": {
      const discarded = discardedStats(execution);
      const finished = await finishCancelled(execution, discarded);
      return reportCancelled(execution, finished ?? (await store.getRun(run.tenantId, run.runId)) ?? current, discarded);
    }
    case "hand_back":
      // A purposeful stop (the worker drains) is not a failure: the run goes back to the queue for another worker.
      await store.transitionRun({ ...base, from: [action.from], to: "queued" });
      execution.trace("handed_back", { reason: "worker_draining" });
      return "handed_back";
    case "fail":
      return fail(execution, action, planError);
    case "report_terminal":
      if (action.isLate) execution.trace("execution_ended_late", { status: current.status });
      emitTerminal(execution, current, 0);
      return current.status as ExecutionOutcome;
    case "leave":
      execution.logger.warn({ ...runLogFields(run), status: current.status }, "run left in a non-terminal status");
      return "failed";
  }
}

/**
 * cancel_requested | cancelling → cancelled, with what was generated and not kept; undefined when
 * the store's run was not (or no longer) this attempt's to finish.
 */
async function finishCancelled(execution: RunExecution, discarded: Partial<UsageStats>): Promise<RunRecord | undefined> {
  const { run, store, clock } = execution;
  const steps = (await execution.steps?.takeUnwritten()) ?? [];
  const finished = await store.finishRun({
    tenantId: run.tenantId,
    runId: run.runId,
    attempt: run.attempt,
    to: "cancelled",
    from: ["cancel_requested", "cancelling"],
    stats: discarded,
    cancelledGeneration: {
      discardedStreamChars: discarded.discardedStreamChars ?? 0,
      discardedOutputTokens: discarded.discardedOutputTokens ?? 0,
      tokensEstimated: discarded.tokensEstimated ?? false,
      // What each collecting step had shown: the set a Continue must not grow silently.
      ...(execution.collected?.size ? { confirmedResults: [...execution.collected.values()] } : {}),
    },
    // Where the cancel was accepted by a process that does not execute the run, only this one knows the step.
    pendingStep: pendingStepOf(execution),
    steps,
    now: clock.now(),
  });
  if (!finished) execution.steps?.returnUnwritten(steps);
  if (finished && discarded.discardedStreamChars) {
    execution.trace("generation_discarded", {
      discarded_stream_chars: discarded.discardedStreamChars,
      discarded_output_tokens: discarded.discardedOutputTokens,
      tokens_estimated: discarded.tokensEstimated,
    });
  }
  return finished;
}

/** The terminal event of a cancelled run, with what it handed to external systems. */
async function reportCancelled(execution: RunExecution, final: RunRecord, discarded: Partial<UsageStats>): Promise<ExecutionOutcome> {
  emitTerminal(execution, final, discarded.discardedStreamChars ?? 0, await externalEffects(execution, final));
  return "cancelled";
}

/** What a run whose Stop stopped the work but could not be recorded says when it fails. */
export const CANCEL_NOT_RECORDED_MESSAGE =
  "The run was stopped, but the Stop could not be recorded, so it ends as failed; nothing after the Stop was published.";

const FAILURE_MESSAGES = {
  cancel_not_recorded: CANCEL_NOT_RECORDED_MESSAGE,
  model_error: "The model failed while generating.",
  run_error: "The run failed.",
} as const;

/**
 * A step error whose message is written for the client, starting with its stable code where it
 * has one (an agent this process does not deploy names only the agent; a structured step's refusal
 * names the problem and the schema paths, never the model's text).
 */
function safeStepMessage(planError: unknown): string | undefined {
  if (AgentDefinitionError.isInstance(planError)) return planError.message;
  if (StructuredOutputError.isInstance(planError) || NotUsableForExecutionError.isInstance(planError)) return planError.message;
  return undefined;
}

/** running → failed, saying why. */
async function fail(execution: RunExecution, action: Extract<SettleAction, { kind: "fail" }>, planError: unknown): Promise<ExecutionOutcome> {
  const { run, store, clock } = execution;
  const { stop } = execution;
  if (action.message === "cancel_not_recorded" && "reason" in stop.state) execution.trace("cancel_not_recorded", { reason: stop.state.reason });
  // ModelError messages are written to be safe (no key, no upstream body).
  const modelError = action.message === "model_error" && ModelFailedError.isInstance(planError) && ModelError.isInstance(planError.cause) ? planError.cause : undefined;
  const finished = await store.finishRun({
    tenantId: run.tenantId,
    runId: run.runId,
    attempt: run.attempt,
    to: "failed",
    from: ["running"],
    stats: discardedStats(execution),
    failureReason: action.reason,
    // An agent this process does not deploy says so (its message names only the agent).
    failureMessage: modelError?.message ?? safeStepMessage(planError) ?? FAILURE_MESSAGES[action.message],
    now: clock.now(),
  });
  execution.trace("run_failed", { error: describe(planError) });
  const final = finished ?? (await store.getRun(run.tenantId, run.runId)) ?? run;
  if (finished) {
    execution.tracing.failed(finished);
    logRunFailure(execution.logger, finished, describe(planError), planError);
  }
  emitTerminal(execution, final, 0);
  return "failed";
}

/** How the run's work ended, in the lifecycle's terms. */
function workOutcome(planError: unknown): WorkOutcome {
  if (planError === undefined) return "done";
  if (PublicationRejectedError.isInstance(planError)) return "publication_rejected";
  if (ModelFailedError.isInstance(planError)) {
    return ModelError.isInstance(planError.cause) && planError.cause.kind === "cancelled" ? "provider_cancelled" : "model_failed";
  }
  return "error";
}

/**
 * Logs a run's failure once, where it is decided (the failed write that won), with the cause for
 * the operator: a model error's kind, status and (safe) message as fields of their own. A
 * warning: a failing provider is the deployment's weather, not the server's fault.
 */
export function logRunFailure(logger: RunExecution["logger"], run: RunRecord, cause: string, error?: unknown): void {
  const modelError = ModelFailedError.isInstance(error) && ModelError.isInstance(error.cause) ? error.cause : ModelError.isInstance(error) ? error : undefined;
  logger.warn(
    {
      ...runLogFields(run),
      attempt: run.attempt,
      reason: run.failureReason,
      failure_message: run.failureMessage,
      cause,
      ...(modelError
        ? { error_kind: modelError.kind, error_message: modelError.message, ...(modelError.status !== undefined ? { error_status: modelError.status } : {}) }
        : {}),
    },
    "run failed",
  );
}

/** The counts of generation that was started and not published. */
function discardedStats(execution: RunExecution): Partial<UsageStats> {
  return execution.generations.discardedStats(execution.heardChars);
}

/** Emits the terminal event matching `run`'s terminal status. */
export function emitTerminal(
  execution: Pick<RunExecution, "emit">,
  run: RunRecord,
  discardedStreamChars: number,
  effects: ExternalEffect[] = [],
): void {
  const ending = endingOf(run);
  switch (ending?.status) {
    case "completed":
      execution.emit({ type: "run.completed", run_id: run.runId, state_version: ending.stateVersion, published_message_id: ending.publishedMessageId });
      break;
    case "cancelled":
      execution.emit({
        type: "run.cancelled",
        run_id: run.runId,
        reason: ending.reason,
        resume_checkpoint_id: ending.resumeCheckpointId,
        discarded_stream_chars: discardedStreamChars,
        external_effects: effects,
      });
      break;
    case "failed":
      execution.emit({ type: "run.failed", run_id: run.runId, reason: ending.reason, message: ending.message });
      break;
  }
}

/** Tells the model, right before the new input, that its previous response was stopped (policy `regenerate_pending_step`). */
export const STOPPED_RESPONSE_NOTE =
  "The user stopped your previous response before it finished; what you had written was discarded. Answer the next message afresh.";

function noteStoppedResponse(context: ModelMessage[], stopped: CheckpointRecord | undefined): void {
  // (A fragment saved or deleted after the Stop, or a branch made from it, does not change what the model must be told.)
  // Only a cancel that caught a step in progress interrupted a response (not one of a run that never started).
  if (!stopped || stopped.pendingStep === null) return;
  const inputAt = context.findLastIndex((message) => message.role === "user");
  // The discarded text itself is never glued on: it was never kept.
  context.splice(inputAt < 0 ? context.length : inputAt, 0, { role: "system", content: STOPPED_RESPONSE_NOTE });
}

/** What this run handed to external systems, from the ledger: the truth for `run.cancelled`. */
export async function externalEffects(execution: Pick<RunExecution, "store" | "hasHandedOver">, run: RunRecord): Promise<ExternalEffect[]> {
  // Nothing to read for a first attempt that never began a commit (the usual Stop of an answer).
  if (run.attempt === 1 && !execution.hasHandedOver) return [];
  const operations = await execution.store.listOperations(run.tenantId, run.threadId);
  return operations
    .filter((operation) => operation.runId === run.runId && HANDED_OVER.includes(operation.phase))
    .map((operation) => ({ op_id: operation.opId, tool: operation.toolName, phase: operation.phase }));
}

const HANDED_OVER: readonly OperationPhase[] = ["committing", "committed", "failed", "outcome_unknown"];

/** The synthetic result for a tool call without a result message, as the ledger knows it. */
function outcomeFromLedger(operations: readonly OperationRecord[]): (call: MessageToolCall) => string {
  const byCall = new Map(operations.map((operation) => [operation.toolCallId, operation]));
  return (call) => {
    const operation = byCall.get(call.toolCallId);
    switch (operation?.phase) {
      case "committed":
        return operation.reducedAt ? "[committed before the stop] (its result is no longer kept)" : `[committed before the stop] ${JSON.stringify(operation.result)}`;
      case "outcome_unknown":
      case "committing":
        return `[outcome unknown] ${call.toolName} was handed to the external system, but its result was not recorded. Do not repeat it until it is confirmed.`;
      case "failed":
        return `[failed] ${operation.error ?? "the external system refused it"}`;
      default:
        return CANCELLED_BEFORE_EXECUTION;
    }
  };
}

function describe(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}${error.cause ? ` (cause: ${describe(error.cause)})` : ""}`;
  return String(error);
}
