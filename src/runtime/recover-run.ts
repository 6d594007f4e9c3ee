import { decideRecovery, leaseOf, type RecoveryAction, type Redactor, type RunEventDraft, type RunRecord } from "../core/index.js";
import type { Store } from "../store/index.js";
import { emitTerminal, logRunFailure } from "./execute-run.js";
import type { Logger } from "../core/logger.js";
import { traceRecovery } from "./tracing.js";

/** What recovery needs from the runtime. */
export interface RecoveryContext {
  store: Store;
  now: number;
  /** The recoverer: it takes the lost attempt's lease first, so no other recoverer acts on it. */
  owner: string;
  leaseMs: number;
  logger: Logger;
  /** What the recovery's span attributes pass through. */
  redactor: Redactor;
  /** Claims and executes a queued run on this process. */
  launch(run: RunRecord): void;
  trace(run: RunRecord, kind: string, data: Record<string, unknown>): void;
  /** The run's emitter, continuing the attempt's stream (in a scaled deployment, from the shared log). */
  emitter(run: RunRecord): Promise<(draft: RunEventDraft) => void>;
}

/**
 * Recovers one run whose lease expired (its process died) or that nobody claimed:
 * - a queued run is claimed and executed;
 * - a run whose cancel was accepted is cancelled, since its work stopped with its worker;
 * - otherwise the run's policy decides: `resume` runs it again from its last checkpoint as a new
 *   attempt, `fail` ends it `failed {reason: worker_lost}`.
 * The recoverer first takes the lost attempt's expired lease, and every step is a compare-and-set
 * on that attempt, so two recoverers (or a recoverer and the attempt that followed) never both
 * act. Returns whether it acted.
 */
export async function recoverRun(run: RunRecord, context: RecoveryContext): Promise<boolean> {
  const action = decideRecovery(run.status, run.recoveryPolicy);
  if (action.kind === "none") return false;
  return traceRecovery(context.redactor, run, action.kind, () => carryOutRecovery(run, action, context));
}

async function carryOutRecovery(run: RunRecord, action: Exclude<RecoveryAction, { kind: "none" }>, context: RecoveryContext): Promise<boolean> {
  const { store, now } = context;
  if (action.kind === "claim") {
    context.trace(run, "recovered", { from: run.status, action: "claim" });
    context.launch(run);
    return true;
  }
  // Fenced by the lost attempt: a recoverer acting on a stale list changes nothing.
  const base = { tenantId: run.tenantId, runId: run.runId, attempt: run.attempt, now };
  const isTakenOver = await store.takeOverLease({ ...base, owner: context.owner, leaseExpiresAt: now + context.leaseMs });
  if (!isTakenOver) return false;
  await settleOperations(run, context);
  switch (action.kind) {
    case "cancel": {
      const cancelled = await store.finishRun({ ...base, to: "cancelled", from: ["cancel_requested", "cancelling"], stats: {} });
      if (cancelled) await ended(context, cancelled, "cancelled");
      return cancelled !== undefined;
    }
    case "resume": {
      const requeued = await store.transitionRun({ ...base, from: ["running", "interrupted"], to: "queued" });
      if (!requeued) return false;
      context.trace(requeued, "recovered", { from: run.status, action: "resume", attempt: requeued.attempt });
      context.launch(requeued);
      return true;
    }
    case "fail": {
      const failed = await store.finishRun({
        ...base,
        to: "failed",
        from: ["running", "interrupted"],
        stats: {},
        failureReason: "worker_lost",
        failureMessage: "The process running this run stopped before it finished.",
      });
      if (failed) {
        logRunFailure(context.logger, failed, `the lease of attempt ${run.attempt} (${leaseOf(run)?.owner ?? "no owner"}) expired`);
        await ended(context, failed, "failed");
      }
      return failed !== undefined;
    }
  }
}

async function ended(context: RecoveryContext, run: RunRecord, action: string): Promise<void> {
  context.trace(run, "recovered", { action });
  emitTerminal({ emit: await context.emitter(run) }, run, 0);
}

/**
 * A lost run's operations: one handed over but not recorded is `outcome_unknown` (the next run
 * must confirm it); one prepared but never handed over is abandoned.
 */
async function settleOperations(run: RunRecord, context: RecoveryContext): Promise<void> {
  const { store, now } = context;
  const unknown = await store.markOutcomesUnknown(run.tenantId, run.runId, now);
  for (const operation of unknown) context.trace(run, "operation_outcome_unknown", { op_id: operation.opId, tool: operation.toolName });
  for (const operation of await store.listOperations(run.tenantId, run.threadId)) {
    if (operation.runId === run.runId && operation.phase === "prepared") {
      await store.abandonOperation({ tenantId: run.tenantId, opId: operation.opId, now });
    }
  }
}
