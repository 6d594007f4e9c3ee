/**
 * Rollback (LangGraph's `action=rollback`, `multitask_strategy: "rollback"`): Stop the run, wait
 * until it has really stopped, then take its turn back: its input leaves the visible result as a
 * new version of the thread (docs/decisions/012-a-rollback-takes-back-a-stopped-turn.md). Nothing
 * of the answer was ever published (a Stop discards it), so the thread is as before the run.
 */
import { createId, isTerminalStatus, TidemarkError, type CheckpointRecord, type Clock, type MessageRecord, type RunRecord, type ThreadRecord } from "../core/index.js";
import type { Store } from "../store/index.js";
import type { CancelRunResult } from "./cancel-run.js";

/** What a rollback needs from the runtime. */
export interface RollbackContext {
  store: Store;
  clock: Clock;
  cancelRun(tenantId: string, runId: string, reason: string): Promise<CancelRunResult>;
  waitForTerminal(tenantId: string, runId: string, timeoutMs: number): Promise<RunRecord | undefined>;
}

/** A rollback's outcome: the ended run, its input (now `deleted`), and the version that took it back. */
export interface RollbackOutcome {
  run: RunRecord;
  message: MessageRecord;
  checkpoint: CheckpointRecord;
  thread: ThreadRecord;
  /** The run was rolled back before: the same outcome, nothing written now. */
  isRepeat: boolean;
}

/** A rollback request: the run, the cancel reason if it is still running, and how long to wait for its stop. */
export interface RollbackRequest {
  tenantId: string;
  runId: string;
  reason: string;
  waitMs: number;
}

/** Stops the run (if it has not ended), waits until it is terminal, and rolls its input back; refusals throw. */
export async function rollBackRun(context: RollbackContext, request: RollbackRequest): Promise<RollbackOutcome> {
  const { tenantId, runId } = request;
  const cancelled = await context.cancelRun(tenantId, runId, request.reason);
  if (cancelled.kind === "pending_creation") throw new TidemarkError("run_not_found", "No such run.");
  let run = cancelled.run;
  if (!isTerminalStatus(run.status)) run = (await context.waitForTerminal(tenantId, runId, request.waitMs)) ?? run;
  if (!isTerminalStatus(run.status)) {
    throw new TidemarkError("run_not_rollbackable", "The run has not stopped yet; roll it back once it has.", {
      details: { run_status: run.status, reason: "not_ended" },
    });
  }
  const result = await context.store.rollbackRun({ tenantId, runId, checkpointId: createId("cp"), now: context.clock.now() });
  switch (result.kind) {
    case "rolled_back":
    case "already_rolled_back": {
      const { kind, ...outcome } = result;
      return { ...outcome, isRepeat: kind === "already_rolled_back" };
    }
    case "run_not_found":
      throw new TidemarkError("run_not_found", "No such run.");
    case "not_rollbackable":
      throw new TidemarkError("run_not_rollbackable", notRollbackableMessage[result.reason], {
        details: { run_status: result.run.status, reason: result.reason },
      });
    case "run_in_progress":
    case "thread_moved_on":
      throw new TidemarkError(
        "rollback_conflict",
        result.kind === "run_in_progress"
          ? "Another run of the thread is active: it builds on this run, which can no longer be rolled back."
          : "A message was published after this run's input: history builds on it, so it can no longer be rolled back.",
        { details: { current_state_version: result.thread.stateVersion } },
      );
  }
}

const notRollbackableMessage = {
  not_ended: "The run has not stopped yet; roll it back once it has.",
  completed: "The run completed: its answer is part of the confirmed result and is not rolled back.",
  no_input: "The run has no input of its own in the thread (a Continue, or a run stopped while it waited): there is nothing to roll back.",
} as const;
