import { TidemarkError, type Clock, type OperationRecord, type RunEventDraft, type RunRecord } from "../core/index.js";
import type { Store } from "../store/index.js";
import { runKey } from "./run-key.js";
import { RunNotRunningError } from "./run-not-running-error.js";
import type { RunExecution } from "./run-execution.js";

/** What approvals need from the runtime. */
export interface ApprovalsContext {
  store: Store;
  clock: Clock;
  emitter(run: RunRecord): (draft: RunEventDraft) => void;
  trace(run: RunRecord, kind: string, data: Record<string, unknown>): void;
}

/** Runs paused for an approval in this process, with the step waiting for the decision. */
export class Approvals {
  readonly #waiters = new Map<string, { opId: string; attempt: number; decide(decision: "approved" | "rejected"): void }>();
  readonly #context: ApprovalsContext;

  constructor(context: ApprovalsContext) {
    this.#context = context;
  }

  /** Pauses a run (`interrupted`) for an approval; resolves with the decision, rejects on Stop. */
  async awaitApproval(execution: RunExecution, operation: OperationRecord, signal: AbortSignal): Promise<"approved" | "rejected"> {
    const { store, clock } = this.#context;
    const { run } = execution;
    const key = runKey(run.tenantId, run.runId);
    const paused = await store.transitionRun({
      tenantId: run.tenantId,
      runId: run.runId,
      attempt: run.attempt,
      from: ["running"],
      to: "interrupted",
      activeOperation: operation.opId,
      now: clock.now(),
    });
    signal.throwIfAborted();
    if (!paused) throw new RunNotRunningError(run.runId, "the run could not pause for approval");
    execution.emit({
      type: "run.interrupted",
      run_id: run.runId,
      op_id: operation.opId,
      tool: operation.toolName,
      idempotency_key: operation.idempotencyKey,
      preview: operation.preview,
    });
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#waiters.delete(key);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiters.set(key, {
        opId: operation.opId,
        attempt: run.attempt,
        decide: (decision) => {
          signal.removeEventListener("abort", onAbort);
          this.#waiters.delete(key);
          resolve(decision);
        },
      });
    });
  }

  /** Whether this process holds the run that waits for a decision. */
  isWaiting(tenantId: string, runId: string): boolean {
    return this.#waiters.has(runKey(tenantId, runId));
  }

  /** APPROVE / REJECT the consequential operation a run is paused for. */
  async decide(tenantId: string, runId: string, decision: "approved" | "rejected"): Promise<RunRecord> {
    const { store, clock } = this.#context;
    const run = await store.getRun(tenantId, runId);
    if (!run) throw new TidemarkError("run_not_found", "No such run.");
    const waiter = this.#waiters.get(runKey(tenantId, runId));
    if (!waiter || run.status !== "interrupted") {
      throw new TidemarkError("run_not_interrupted", "The run is not waiting for an approval.", { details: { status: run.status } });
    }
    const resumed = await store.transitionRun({ tenantId, runId, attempt: waiter.attempt, from: ["interrupted"], to: "running", now: clock.now() });
    if (!resumed) {
      const current = await store.getRun(tenantId, runId);
      throw new TidemarkError("run_not_interrupted", "The run is not waiting for an approval.", { details: { status: current?.status } });
    }
    this.#context.emitter(resumed)({ type: "run.resumed", run_id: runId, op_id: waiter.opId, decision });
    this.#context.trace(resumed, decision === "approved" ? "operation_approved" : "operation_rejected", { op_id: waiter.opId });
    waiter.decide(decision);
    return resumed;
  }
}
