import { acceptedCancelOf, type Clock, type OperationRecord, type Redactor, type RunEventDraft, type RunRecord } from "../core/index.js";
import type { Store } from "../store/index.js";
import type { Tool } from "../tools/tool.js";
import { runInBackground } from "./background.js";
import { CancelScope } from "./cancel-scope.js";
import type { DisconnectWatch } from "./disconnect-watch.js";
import { executeRun, type ExecutionOutcome } from "./execute-run.js";
import { stopForAcceptedCancel } from "./cancel-run.js";
import { fencedStore } from "./fenced-store.js";
import { runLogFields, type Logger } from "../core/logger.js";
import type { ChatModel, ModelToolDefinition } from "../core/model.js";
import type { AgentRegistry } from "../agents/agent-registry.js";
import { undeployedAgent } from "../agents/undeployed-agent.js";
import { GenerationMeters } from "./generation-meter.js";
import type { LiveOutput } from "./live-output.js";
import type { RunExecution } from "./run-execution.js";
import { runKey } from "./run-key.js";
import { RunStop } from "./run-stop.js";
import type { RuntimeObserver } from "./runtime-observer.js";
import { RunTracing, type TraceCarrier } from "./tracing.js";

/** What launching a run needs from the runtime. */
export interface LaunchRunContext {
  store: Store;
  model: ChatModel;
  clock: Clock;
  logger: Logger;
  /** What the run's spans and operation previews pass through. */
  redactor: Redactor;
  leaseMs: number;
  workerId: string;
  tools: ReadonlyMap<string, Tool>;
  toolDefinitions: readonly ModelToolDefinition[];
  agents: AgentRegistry;
  observer: RuntimeObserver;
  /** Runs being executed by this process, by {@link runKey}. */
  active: Map<string, RunExecution>;
  /** The background tasks of those runs, so `close` can wait for them. */
  executions: Set<Promise<unknown>>;
  disconnectWatch: DisconnectWatch;
  /** How long a run's shielded work (a tool's commit) may go on after a Stop or a shutdown. */
  shieldTimeoutMs?: number;
  isClosed(): boolean;
  emitter(run: RunRecord): (draft: RunEventDraft) => void;
  trace(run: RunRecord, kind: string, data: Record<string, unknown>): void;
  cancelRun(tenantId: string, runId: string, reason: string): Promise<unknown>;
  awaitApproval(execution: RunExecution, operation: OperationRecord, signal: AbortSignal): Promise<"approved" | "rejected">;
  admitNext(tenantId: string, threadId: string): Promise<void>;
  /** Called once a run's execution ended here, whatever its outcome (a slot is free again). */
  onRunSettled?(): void;
  /** Live turns' playback, by {@link runKey}: attached before the run is created. */
  liveOutputs: ReadonlyMap<string, LiveOutput>;
}

/**
 * Claims a queued run for this process and executes it in the background; `isClaimed` when the
 * caller already holds its lease (a worker's batch claim). `traceContext`: the creating request's
 * W3C trace context, the parent of the run's span.
 */
export function launchRun(context: LaunchRunContext, run: RunRecord, isClaimed = false, traceContext?: TraceCarrier): void {
  const { store, clock, logger } = context;
  const key = runKey(run.tenantId, run.runId);
  const scope = CancelScope.root({ shieldTimeoutMs: context.shieldTimeoutMs });
  const emitToStream = context.emitter(run);
  // Once the lease keeper let go of the run (decision 014), its execution writes nothing more:
  // no store call, no event (the recoverer continues the stream), no trace.
  const isFenced = (): boolean => execution.stop.state.kind === "fenced";
  const emit = (draft: RunEventDraft): void => {
    if (!isFenced()) emitToStream(draft);
  };
  const execution: RunExecution = {
    run,
    store: fencedStore(store, isFenced),
    model: context.model,
    clock,
    logger,
    scope,
    emit,
    trace: (kind, data) => {
      if (!isFenced()) context.trace(run, kind, data);
    },
    requestCancel: async (reason) => {
      await context.cancelRun(run.tenantId, run.runId, reason);
    },
    agent: context.agents.get(run.agent) ?? undeployedAgent(run.agent),
    config: run.config ? (JSON.parse(run.config) as unknown) : {},
    activeSteps: new Map(),
    steps: undefined,
    tools: context.tools,
    toolDefinitions: context.toolDefinitions,
    activeOperation: null,
    awaitApproval: (operation, signal) => context.awaitApproval(execution, operation, signal),
    stop: new RunStop(scope),
    generations: new GenerationMeters(),
    liveOutput: context.liveOutputs.get(key),
    heardChars: 0,
    hasHandedOver: false,
    tracing: new RunTracing(run, context.redactor, traceContext),
    redactor: context.redactor,
    chunkAfterStop: () => context.observer.onChunkAfterStop?.(execution.run),
  };
  // Registered before the claim, so a cancel that lands while claiming still aborts it. Two
  // launches of one run can meet here (the run's create launches it while a worker's batch claim
  // takes it): the one that holds the claim owns the key, and a launch still claiming never
  // takes it from an execution already registered.
  if (isClaimed || !context.active.has(key)) context.active.set(key, execution);
  let isSettled = false;
  let ended: { outcome: string; status?: RunRecord["status"] } = { outcome: "error" };
  const task = (async () => {
    try {
      const claimed = isClaimed
        ? run
        : await store.claimRun({
            tenantId: run.tenantId,
            runId: run.runId,
            owner: context.workerId,
            leaseExpiresAt: clock.now() + context.leaseMs,
            now: clock.now(),
          });
      if (!claimed) return;
      context.active.set(key, execution);
      emit({ type: "run.started", run_id: run.runId, thread_id: run.threadId, attempt: claimed.attempt, status: claimed.status });
      execution.run = claimed;
      // A worker's batch claim registers its execution only now: a cancel accepted since the claim
      // reached another launch of the run (one that then lost the claim) or a process that found
      // no execution here. Read once more, so that it stops this one (the history checker's race).
      if (isClaimed) await takeUpAcceptedCancel(context, execution);
      execution.tracing.claimed(claimed);
      const outcome = await executeRun(execution);
      isSettled = true;
      ended = { outcome, status: STATUS_AFTER[outcome] };
      finished(context, execution, claimed, outcome);
    } catch (error) {
      // The executor could not settle the run (e.g. the store failed): stop renewing its lease
      // so recovery applies the run's policy instead of leaving it running forever.
      if (!isSettled) await store.releaseLease(run.tenantId, run.runId, context.workerId).catch(() => undefined);
      throw error;
    } finally {
      // Only its own registration: a launch that lost the claim leaves the winner's in place.
      if (context.active.get(key) === execution) {
        context.active.delete(key);
        context.disconnectWatch.forget(run.tenantId, run.runId);
      }
      scope.dispose();
      execution.tracing.end(ended.outcome, ended.status);
      context.onRunSettled?.();
      if (!context.isClosed()) runInBackground(logger, "admit next run", () => context.admitNext(run.tenantId, run.threadId), runLogFields(run));
    }
  })();
  context.executions.add(task);
  runInBackground(logger, `run ${run.runId}`, () => task.finally(() => context.executions.delete(task)), runLogFields(run));
}

/** The run's status after its execution here ended so (a superseded attempt's is the next attempt's to say). */
const STATUS_AFTER: Readonly<Record<ExecutionOutcome, RunRecord["status"] | undefined>> = {
  completed: "completed",
  cancelled: "cancelled",
  failed: "failed",
  handed_back: "queued",
  superseded: undefined,
  // Self-fenced: whoever recovers the run says how it ended.
  fenced: undefined,
};

function finished(context: LaunchRunContext, execution: RunExecution, run: RunRecord, outcome: ExecutionOutcome): void {
  if (outcome === "cancelled" && execution.stop.state.kind === "recorded") {
    const endedAt = context.clock.now();
    runInBackground(context.logger, "cancel latency", async () => {
      const final = await context.store.getRun(run.tenantId, run.runId);
      const accepted = final && acceptedCancelOf(final);
      if (final && accepted) context.observer.onCancelCompleted?.(final, endedAt - accepted.requestedAt);
    }, runLogFields(run));
  }
  context.observer.onRunEnded?.(run, outcome);
}

/** Stops `execution` if its run's cancel was already accepted in the store (a no-op otherwise). */
async function takeUpAcceptedCancel(context: LaunchRunContext, execution: RunExecution): Promise<void> {
  const current = await context.store.getRun(execution.run.tenantId, execution.run.runId);
  const accepted = current && current.attempt === execution.run.attempt ? acceptedCancelOf(current) : undefined;
  if (!accepted) return;
  const { reason, stateVersion, checkpointId } = accepted;
  await stopForAcceptedCancel({ store: context.store, clock: context.clock }, execution, { reason, stateVersion, checkpointId, kind: "cancel_accepted" });
}
