import { acceptedCancelOf, createId, isId, isTerminalStatus, planAcceptedCancel, stopProtocol, TidemarkError, type CheckpointKind, type Clock, type MessageRecord, type Redactor, type RunEventDraft, type RunRecord } from "../core/index.js";
import type { Cluster } from "./cluster.js";
import type { AcceptedCancelRecord, Store } from "../store/index.js";
import { emitTerminal } from "./execute-run.js";
import type { PendingCancels } from "./pending-cancels.js";
import { pendingStepOf, type RunExecution } from "./run-execution.js";
import { runKey } from "./run-key.js";
import type { RuntimeObserver } from "./runtime-observer.js";
import { CancelTrace } from "./tracing.js";
import { runLogFields, type Logger } from "../core/logger.js";

/** What a cancel did. */
export type CancelRunResult =
  | { kind: "accepted"; run: RunRecord; acceptedStateVersion: number; resumeCheckpointId: string; heardMessage?: MessageRecord }
  | { kind: "already_requested"; run: RunRecord }
  | { kind: "already_terminal"; run: RunRecord }
  /** A client-named run that does not exist yet: the cancel applies when it is created. */
  | { kind: "pending_creation"; runId: string };

/** What the cancel path needs from the runtime. */
export interface CancelRunContext {
  store: Store;
  clock: Clock;
  observer: RuntimeObserver;
  logger: Logger;
  /** What the cancel's span attributes pass through. */
  redactor: Redactor;
  /** Runs being executed by this process, by {@link runKey}. */
  active: ReadonlyMap<string, RunExecution>;
  pendingCancels: PendingCancels;
  /** Other processes, when several share the database: the one executing a run is told there. */
  cluster?: Cluster;
  emitter(run: RunRecord): (draft: RunEventDraft) => void;
  trace(run: RunRecord, kind: string, data: Record<string, unknown>): void;
  /** Starts the oldest run waiting on a thread once the thread is free. */
  admitNext(tenantId: string, threadId: string): Promise<void>;
}

/** Accepts a cancel (STOP) for one run; never refused for a stale version. */
export async function cancelRun(context: CancelRunContext, tenantId: string, runId: string, reason: string): Promise<CancelRunResult> {
  const execution = context.active.get(runKey(tenantId, runId));
  const traced = new CancelTrace(execution?.run ?? { tenantId, runId }, reason, execution?.tracing, context.redactor);
  try {
    const result = await acceptCancel(context, execution, tenantId, runId, reason, traced);
    traced.settled(result.kind === "pending_creation" ? undefined : result.run.status);
    return result;
  } catch (error) {
    traced.failed(error);
    throw error;
  }
}

async function acceptCancel(
  context: CancelRunContext,
  execution: RunExecution | undefined,
  tenantId: string,
  runId: string,
  reason: string,
  traced: CancelTrace,
): Promise<CancelRunResult> {
  const { store, clock } = context;
  // A Stop that already aborted the work at its request's headers is recorded here, with the step it caught then.
  const stoppedAtRequest = execution?.stoppedAtRequest;
  if (execution) execution.stoppedAtRequest = undefined;
  if (stoppedAtRequest) traced.aborted({ atRequest: true });
  const pendingStep = stoppedAtRequest ? stoppedAtRequest.pendingStep : pendingStepOf(execution);
  // Where the run executes here, the work stops at once and the cancel is recorded after: nothing
  // a client can see (the reply, the events, the status) comes before the store accepted it, and
  // the executor settles only once the stop is decided (decision 005). Elsewhere the store
  // records it first and the executing process is told (`carryOutAcceptedCancel`).
  if (stopProtocol(execution !== undefined) === "abort_then_record" && execution?.stop.apply({ type: "stop_requested", reason })) {
    traced.aborted();
    // One turn of the event loop lets the HTTP client close the provider's socket before the
    // commit; nothing can publish meanwhile (the work is aborted and waits for the decision).
    await new Promise(setImmediate);
  }
  let result: Awaited<ReturnType<Store["requestCancel"]>>;
  try {
    result = await store.requestCancel({
      tenantId,
      runId,
      reason,
      checkpointId: createId("cp"),
      pendingStep,
      now: clock.now(),
      // A live turn: what the user heard of the answer is published with the cancel (DESIGN §12).
      heard: execution?.liveOutput?.heard(),
    });
  } catch (error) {
    // The work is already stopped: the run ends failed, and says why (never silently, never "cancelled").
    context.logger.error(
      { ...(execution ? runLogFields(execution.run) : { run_id: runId, tenant_id: tenantId }), error: String(error) },
      "a Stop could not be recorded; the run ends as failed",
    );
    execution?.stop.apply({ type: "stop_not_recorded" });
    throw error;
  }
  traced.recorded(result.kind, "run" in result ? result.run : undefined);
  const isRecorded = result.kind === "accepted" || result.kind === "already_requested";
  execution?.stop.apply(isRecorded ? { type: "stop_recorded", reason } : { type: "stop_not_recorded" });
  // Two launches of one run can meet (its create's and a worker's batch claim): the one this Stop
  // reached may have lost the claim while the cancel was recorded. The one registered now stops too.
  const registered = context.active.get(runKey(tenantId, runId));
  if (isRecorded && registered && registered !== execution) registered.stop.apply({ type: "stop_recorded", reason });
  if (result.kind === "not_found") {
    if (!isId(runId, "run")) throw new TidemarkError("run_not_found", "No such run.");
    context.pendingCancels.remember(tenantId, runId, reason, clock.now());
    // The create may have landed after the store answered and looked for a remembered cancel
    // before it was remembered: then apply it here. Whoever takes it applies it, once.
    const created = await store.getRun(tenantId, runId);
    if (created && context.pendingCancels.take(tenantId, runId, clock.now()) !== undefined) return cancelRun(context, tenantId, runId, reason);
    return { kind: "pending_creation", runId };
  }
  if (result.kind === "already_requested" && !execution && context.cluster) {
    // Said again, in case the first notice was lost on its way to the worker.
    const accepted = acceptedCancelOf(result.run);
    if (accepted) await context.cluster.sendControl(cancelNotice(result.run, accepted.reason, accepted.stateVersion, accepted.checkpointId));
  }
  if (result.kind !== "accepted") return result;
  const executing = registered ?? execution;
  if (executing && result.heardMessage) executing.heardChars = result.heardMessage.content.length;
  await carryOutAcceptedCancel(context, executing, result, reason);
  const { run, thread, checkpoint, heardMessage } = result;
  return { kind: "accepted", run, acceptedStateVersion: thread.stateVersion, resumeCheckpointId: checkpoint.checkpointId, ...(heardMessage ? { heardMessage } : {}) };
}

/**
 * The first half of an HTTP Stop, taken as soon as the request's headers are read and its tenant
 * known (issue 18): a run executing here stops its work at once, before the body is read and
 * checked, the rate limit counted and the cancel recorded. Returns whether it stopped the work;
 * then the cancel must be recorded after, whatever becomes of the request (`recordStopAtRequest`).
 */
export function stopAtRequest(context: Pick<CancelRunContext, "active">, tenantId: string, runId: string): boolean {
  const execution = context.active.get(runKey(tenantId, runId));
  if (!execution || stopProtocol(true) !== "abort_then_record") return false;
  const pendingStep = pendingStepOf(execution);
  if (!execution.stop.apply({ type: "stop_requested", reason: DEFAULT_CANCEL_REASON })) return false;
  execution.stoppedAtRequest = { pendingStep };
  return true;
}

/**
 * Records a Stop that `stopAtRequest` began, if its request ended without recording it (a body
 * refused, a rate limit, a client gone): the work is already stopped, so the cancel stands, with
 * the default reason.
 */
export async function recordStopAtRequest(context: CancelRunContext, tenantId: string, runId: string): Promise<void> {
  const execution = context.active.get(runKey(tenantId, runId));
  if (!execution?.stoppedAtRequest) return;
  await cancelRun(context, tenantId, runId, DEFAULT_CANCEL_REASON);
}

/** A cancel's reason when its request names none. */
export const DEFAULT_CANCEL_REASON = "user_requested";

/**
 * Carries out a cancel the store accepted: the work stops (here, or through the cluster in the
 * process that executes the run), the run's stream is told, and a run that never started ends.
 */
export async function carryOutAcceptedCancel(
  context: CancelRunContext,
  execution: RunExecution | undefined,
  accepted: AcceptedCancelRecord,
  reason: string,
): Promise<void> {
  const { store, clock, observer } = context;
  const { run, thread, checkpoint } = accepted;
  const acceptedAt = acceptedCancelOf(run)?.requestedAt ?? clock.now();
  observer.onCancelAccepted?.(run);
  const announced = { reason, stateVersion: thread.stateVersion, checkpointId: checkpoint.checkpointId, kind: checkpoint.kind };
  const plan = planAcceptedCancel({ executesHere: execution !== undefined, hasCluster: context.cluster !== undefined, isEnded: isTerminalStatus(run.status) });
  // Recorded before the work was stopped (a TERMINATE), or already stopped by this Stop: a no-op then.
  if (plan.stopWorkHere) execution?.stop.apply({ type: "stop_recorded", reason });
  // Another process executes the run: it stops the work and tells the stream, being the one writer of the run's events.
  if (plan.notifyWorker) await context.cluster?.sendControl(cancelNotice(run, reason, announced.stateVersion, announced.checkpointId));
  if (plan.announceHere) {
    context.cluster?.unfollow(run.tenantId, run.runId);
    const emit = context.emitter(run);
    await announceCancel({ store, clock, emit }, execution, run, announced);
    if (plan.endNow) {
      // It never started: nothing to wait for.
      emitTerminal({ emit }, run, 0);
      observer.onCancelCompleted?.(run, clock.now() - acceptedAt);
    }
  }
  if (plan.admitNext) await context.admitNext(run.tenantId, run.threadId);
  context.trace(run, "cancel_accepted", { reason, accepted_at: acceptedAt, accepted_state_version: thread.stateVersion });
}

/**
 * TERMINATE: deletes the thread and cancels every run of it in one store transaction (so a run
 * created at the same moment is either cancelled with it or refused), then stops their work.
 */
export async function terminateThread(
  context: CancelRunContext,
  tenantId: string,
  threadId: string,
): Promise<{ cancelledRunIds: string[] } | undefined> {
  const reason = "thread_terminated";
  const result = await context.store.deleteThread({ tenantId, threadId, reason, createCheckpointId: () => createId("cp"), now: context.clock.now() });
  if (result.kind === "thread_not_found") return undefined;
  for (const accepted of result.cancels) {
    await carryOutAcceptedCancel(context, context.active.get(runKey(tenantId, accepted.run.runId)), accepted, reason);
  }
  return { cancelledRunIds: [...result.cancels.map((accepted) => accepted.run.runId), ...result.stopping.map((run) => run.runId)] };
}

/** What a cancel accepted by the store says on the run's stream. */
export interface AcceptedCancel {
  reason: string;
  stateVersion: number;
  checkpointId: string;
  kind: CheckpointKind;
}

/**
 * Tells the run's stream that its cancel was accepted, and moves a run whose action is already
 * with the external system to `cancelling` (it waits for the outcome, and says so).
 */
export async function announceCancel(
  context: { store: Store; clock: Clock; emit: (draft: RunEventDraft) => void },
  execution: RunExecution | undefined,
  run: RunRecord,
  accepted: AcceptedCancel,
): Promise<void> {
  const { store, clock, emit } = context;
  // A publication that committed before this cancel may not have emitted yet: its events come first.
  if (execution?.publishing?.size) await Promise.all(execution.publishing);
  emit({
    type: "run.cancel_requested",
    run_id: run.runId,
    reason: accepted.reason,
    accepted_state_version: accepted.stateVersion,
    resume_checkpoint_id: accepted.checkpointId,
  });
  emit({ type: "checkpoint.saved", run_id: run.runId, checkpoint_id: accepted.checkpointId, state_version: accepted.stateVersion, kind: accepted.kind });
  const operation = execution?.activeOperation;
  // The steps still finishing when the cancel landed (each heard it; the run ends once all settled).
  const steps = execution?.steps?.inProgress() ?? [];
  if (operation?.phase !== "committing" && steps.length > 0) emit({ type: "run.cancelling", run_id: run.runId, active_operation: null, steps });
  if (operation?.phase === "committing") {
    const cancelling = await store.transitionRun({
      tenantId: run.tenantId,
      runId: run.runId,
      attempt: run.attempt,
      from: ["cancel_requested"],
      to: "cancelling",
      activeOperation: operation.opId,
      now: clock.now(),
    });
    if (cancelling) emit({ type: "run.cancelling", run_id: run.runId, active_operation: `${operation.toolName} (${operation.opId})`, steps });
  }
}

/**
 * The worker's side of a cancel another process accepted: the work stops at once (the store
 * already recorded the cancel), then the stream is told, as a local cancel would.
 */
export async function stopForAcceptedCancel(
  context: { store: Store; clock: Clock },
  execution: RunExecution,
  accepted: AcceptedCancel,
): Promise<boolean> {
  // Recorded first, aborted now (the record-then-notify protocol); false when this process already stopped it.
  if (!execution.stop.apply({ type: "stop_recorded", reason: accepted.reason })) return false;
  // Recorded by another process, then aborted here: this process's part of the cancel's timeline.
  const traced = new CancelTrace(execution.run, accepted.reason, execution.tracing, execution.tracing.redactor);
  traced.recorded("accepted");
  traced.aborted();
  traced.settled(execution.run.status);
  await announceCancel({ ...context, emit: execution.emit }, execution, execution.run, accepted);
  return true;
}


/** The control message that carries an accepted cancel to the worker executing the run. */
function cancelNotice(run: RunRecord, reason: string, stateVersion: number, checkpointId: string) {
  return { kind: "cancel" as const, tenantId: run.tenantId, runId: run.runId, reason, stateVersion, checkpointId };
}
