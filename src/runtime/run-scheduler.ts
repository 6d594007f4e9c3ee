import { createId, type Clock, type OperationRecord, type Redactor, type RunRecord } from "../core/index.js";
import { runLogFields, type Logger } from "../core/logger.js";
import type { ChatModel, ModelToolDefinition } from "../core/model.js";
import type { AgentRegistry } from "../agents/agent-registry.js";
import type { Store } from "../store/index.js";
import type { Tool } from "../tools/tool.js";
import type { Cluster } from "./cluster.js";
import type { DisconnectWatch } from "./disconnect-watch.js";
import { launchRun, type LaunchRunContext } from "./launch-run.js";
import type { LiveOutput } from "./live-output.js";
import type { RunExecution } from "./run-execution.js";
import type { RunJournal } from "./run-journal.js";
import { runKey } from "./run-key.js";
import { CLOSE_SETTLE_MS, settledWithin } from "./settled-within.js";
import type { RuntimeObserver } from "./runtime-observer.js";
import { traceDrain, type TraceCarrier } from "./tracing.js";

/** What the scheduler needs. */
export interface RunSchedulerPorts {
  store: Store;
  model: ChatModel;
  clock: Clock;
  logger: Logger;
  /** What the runs' spans and operation previews pass through. */
  redactor: Redactor;
  journal: RunJournal;
  tools: ReadonlyMap<string, Tool>;
  /** The same tools as the model is offered them. */
  toolDefinitions: readonly ModelToolDefinition[];
  /** The deployed agents a run names. */
  agents: AgentRegistry;
  observer: RuntimeObserver;
  disconnectWatch: DisconnectWatch;
  leaseMs: number;
  /** How long a run's shielded work (a tool's commit) may go on after a Stop or a shutdown; also bounds a drain. */
  shieldTimeoutMs: number;
  workerId: string;
  /** An API process executes nothing: it wakes the workers instead. */
  executes: boolean;
  cluster: Cluster | undefined;
  /** Records a cancel, as a Stop would (a run's provider cancelled). */
  cancel(tenantId: string, runId: string, reason: string): Promise<unknown>;
  awaitApproval(execution: RunExecution, operation: OperationRecord, signal: AbortSignal): Promise<"approved" | "rejected">;
  /** Called once a run's execution ended here, whatever its outcome (a slot is free again). */
  onRunSettled(): void;
  /** Live turns' playback, by {@link runKey}. */
  liveOutputs: ReadonlyMap<string, LiveOutput>;
}

/**
 * The runs this process executes: it launches them (claiming first), admits the next run waiting
 * on a thread once the thread is free, and drains them on close.
 */
export class RunScheduler {
  readonly #ports: RunSchedulerPorts;
  readonly #active = new Map<string, RunExecution>();
  readonly #tasks = new Set<Promise<unknown>>();
  readonly #launchContext: LaunchRunContext;
  #isClosed = false;

  constructor(ports: RunSchedulerPorts) {
    this.#ports = ports;
    const { journal } = ports;
    this.#launchContext = {
      ...ports,
      active: this.#active,
      executions: this.#tasks,
      isClosed: () => this.#isClosed,
      emitter: (run) => journal.emitter(run),
      trace: (run, kind, data) => journal.trace(run, kind, data),
      cancelRun: ports.cancel,
      admitNext: (tenantId, threadId) => this.admitNext(tenantId, threadId),
    };
  }

  /** The run's execution in this process, if it executes here. */
  execution(tenantId: string, runId: string): RunExecution | undefined {
    return this.#active.get(runKey(tenantId, runId));
  }

  /** Runs being executed by this process, by {@link runKey}. */
  get active(): ReadonlyMap<string, RunExecution> {
    return this.#active;
  }

  get isClosed(): boolean {
    return this.#isClosed;
  }

  /** Claims a queued run for this process and executes it in the background (an API process wakes the workers instead). */
  launch(run: RunRecord, traceContext?: TraceCarrier): void {
    if (!this.#ports.executes) this.#ports.cluster?.announceQueued();
    else launchRun(this.#launchContext, run, false, traceContext);
  }

  /** Executes a run this worker already claimed (a batch claim). */
  executeClaimed(run: RunRecord): void {
    launchRun(this.#launchContext, run, true);
  }

  /** Starts the oldest run waiting on a thread once the thread is free (multitask `enqueue`). */
  async admitNext(tenantId: string, threadId: string): Promise<void> {
    const { store, clock, journal, disconnectWatch } = this.#ports;
    const run = await store.admitNextRun(tenantId, threadId, createId("cp"), clock.now());
    if (!run) return;
    journal.trace(run, "run_admitted", { base_checkpoint_id: run.baseCheckpointId });
    if (run.onDisconnect === "cancel") disconnectWatch.watch(run.tenantId, run.runId);
    this.launch(run);
  }

  /**
   * Drains: every run executing here is handed back to the queue at its next safe point
   * (`worker_draining`: a purposeful stop is not a failure); resolves once they settled, or at
   * the latest the shield timeout (a commit's bound after the stop) plus {@link CLOSE_SETTLE_MS}
   * for their final writes, and says whether any was executing.
   */
  async drain(): Promise<boolean> {
    this.#isClosed = true;
    for (const execution of this.#active.values()) execution.stop.apply({ type: "drain" });
    const tasks = [...this.#tasks];
    const isSettled = await traceDrain(this.#ports.redactor, tasks.length, () => settledWithin(tasks, this.#ports.shieldTimeoutMs + CLOSE_SETTLE_MS));
    if (!isSettled) {
      const runs = [...this.#active.values()].map((execution) => runLogFields(execution.run));
      this.#ports.logger.warn({ runs: tasks.length, executing: runs }, "runs were still executing when close() stopped waiting for them");
    }
    return tasks.length > 0;
  }
}
