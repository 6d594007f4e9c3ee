import type { Clock, ConfirmedResults, OperationRecord, PendingStep, Redactor, RunEventDraft, RunRecord, TraceRecord } from "../core/index.js";
import type { Tool } from "../tools/tool.js";
import type { Store } from "../store/index.js";
import type { CancelScope } from "./cancel-scope.js";
import type { RunStop } from "./run-stop.js";
import type { Logger } from "../core/logger.js";
import type { ChatModel, ModelToolDefinition } from "../core/model.js";
import type { Agent } from "../agents/define-agent.js";
import type { GenerationMeters } from "./generation-meter.js";
import type { StepJournal } from "./step-journal.js";
import type { LiveOutput } from "./live-output.js";
import type { RunTracing } from "./tracing.js";

/** One run being executed in this process: what its steps and its cancel path share. */
export interface RunExecution {
  /** The run as last claimed; the same object is shared with the cancel path, never copied. */
  run: RunRecord;
  readonly store: Store;
  readonly model: ChatModel;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly scope: CancelScope;
  /** Appends an event to the run's stream. */
  emit(draft: RunEventDraft): void;
  /** Records a cancel through the store, as a Stop would (e.g. when the provider cancelled). */
  requestCancel(reason: string): Promise<void>;
  /** Records a trace entry in the background. */
  trace(kind: string, data: Record<string, unknown>): void;
  /** The agent that executes the run, and its parsed config. */
  readonly agent: Agent;
  readonly config: unknown;
  /** The result sets of collecting steps (`step.collect`), for the cancel's checkpoint: what the user was shown. */
  collected?: Map<string, ConfirmedResults>;
  /** The steps in progress that an accepted cancel can name in its checkpoint (model or tool work). */
  readonly activeSteps: Map<string, PendingStep>;
  /** The run's steps as the executor moves them; set once the agent's plan starts. */
  steps: StepJournal | undefined;
  /** The tools the model may call, by name. */
  readonly tools: ReadonlyMap<string, Tool>;
  /** The same tools as the model is offered them. */
  readonly toolDefinitions: readonly ModelToolDefinition[];
  /** The consequential operation in progress, so a cancel can say what is still finishing. */
  activeOperation: { opId: string; toolName: string; phase: "prepared" | "awaiting_approval" | "committing" } | null;
  /** Whether this execution began handing an operation to an external system (a commit the cancel's report must read back). */
  hasHandedOver: boolean;
  /** Pauses the run (`interrupted`) until the user approves or rejects `operation`; rejects on Stop. */
  awaitApproval(operation: OperationRecord, signal: AbortSignal): Promise<"approved" | "rejected">;
  /** The run's stop: written by the cancel path, the cluster worker and a drain; read when settling. */
  readonly stop: RunStop;
  /** Generations started and not kept: what a Stop discarded. */
  readonly generations: GenerationMeters;
  /** A live turn's playback (DESIGN §12): answers are published once heard, a cancel publishes the heard part. */
  readonly liveOutput: LiveOutput | undefined;
  /** The characters of the answer a cancel published as heard: kept, so not counted as discarded. */
  heardChars: number;
  /** The run's OpenTelemetry spans (no-ops without an SDK). */
  readonly tracing: RunTracing;
  /** The runtime's redactor: what leaves the confirmed state (an operation's preview) passes through it. */
  readonly redactor: Redactor;
  /**
   * Publications whose store write is under way (set by `publish`), each settled once its events
   * are emitted: a cancel announced meanwhile waits for them, so the stream keeps the store's order.
   */
  publishing?: Set<Promise<void>>;
  /** A provider chunk arrived after the run's Stop aborted its request, and was discarded (metrics). */
  chunkAfterStop(): void;
  /**
   * A Stop that aborted the work as soon as its request's headers were read (`stopAtRequest`), not
   * recorded yet: the step it caught, for the cancel's checkpoint. The cancel that records it clears it.
   */
  stoppedAtRequest?: { pendingStep: PendingStep | null };
}

/** The step a cancel caught, for its checkpoint: the first still in progress, if any. */
export function pendingStepOf(execution: RunExecution | undefined): PendingStep | null {
  if (!execution) return null;
  for (const step of execution.activeSteps.values()) return step;
  return null;
}

/** A trace record for `run`. */
export function traceFor(run: RunRecord, traceId: string, kind: string, data: Record<string, unknown>, at: number): TraceRecord {
  return { tenantId: run.tenantId, traceId, runId: run.runId, threadId: run.threadId, kind, data, at };
}
