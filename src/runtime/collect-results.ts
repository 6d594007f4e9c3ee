/**
 * Results that arrive one at a time (search records, extracted rows), honestly (issue 19): each
 * result shown is sent as `results.added` and joins the step's confirmed set; one that arrives
 * after a Stop is counted and dropped, never shown and never in any later context. The cancel's
 * checkpoint records the confirmed set (`cancelled_generation.confirmed_results`); a Continue
 * repeats the step and says how its new set differs from the confirmed one (`results.updated`).
 */
import type { ConfirmedResults } from "../core/index.js";
import type { CollectedResults, ResultSetUpdate } from "../agents/define-agent.js";
import { InvariantError } from "../core/errors/invariant-error.js";
import type { RunExecution } from "./run-execution.js";

/** What a collection needs besides the execution. */
export interface CollectRequest<T> {
  stepId: string;
  signal: AbortSignal;
  source: (signal: AbortSignal) => AsyncIterable<T>;
  id: (item: T) => string;
  /** The set a Stop confirmed for this step, when this run continues from that Stop. */
  confirmed: ConfirmedResults | undefined;
  /** How long a source that ignores the Stop is still waited for (the run's shield bound). */
  afterStopMs: number;
}

/** What `nextWithin` answers when a source kept silent past its bound after the Stop. */
const SILENT = Symbol("silent");

/** Collects the source's results under the step's signal; throws the Stop's reason if one came. */
export async function collectResults<T>(execution: RunExecution, request: CollectRequest<T>): Promise<CollectedResults<T>> {
  const { stepId, signal } = request;
  const { run } = execution;
  signal.throwIfAborted();
  const set: ConfirmedResults = { stepId, resultIds: [], isComplete: false, arrivedAfterStop: 0 };
  (execution.collected ??= new Map()).set(stepId, set);
  const items: T[] = [];
  const iterator = request.source(signal)[Symbol.asyncIterator]();
  let isDone = false;
  try {
    for (;;) {
      const next = await nextWithin(iterator.next(), signal, request.afterStopMs);
      // A source that ignores the Stop is not waited for past the bound (the run must get to its end).
      if (next === SILENT) break;
      if (next.done) {
        isDone = true;
        break;
      }
      if (signal.aborted) {
        // Arrived after the Stop: not shown, so not confirmed; the trace keeps its count, not its content.
        set.arrivedAfterStop++;
        execution.trace("result_after_stop_discarded", { step_id: stepId });
        break;
      }
      const resultId = request.id(next.value);
      if (typeof resultId !== "string" || resultId.length === 0 || resultId.length > 200) {
        throw new InvariantError(`step "${stepId}": a result's id must be a string of 1–200 characters`);
      }
      items.push(next.value);
      set.resultIds.push(resultId);
      execution.emit({ type: "results.added", run_id: run.runId, step_id: stepId, result_id: resultId, item: next.value as unknown });
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw error;
  } finally {
    // Left early: the source is told to end, without waiting for it (it may be stuck ignoring its signal).
    if (!isDone) iterator.return?.().catch(() => undefined);
  }
  signal.throwIfAborted();
  set.isComplete = true;
  const update = request.confirmed ? updateOf(request.confirmed, set.resultIds) : null;
  if (update) {
    execution.emit({
      type: "results.updated",
      run_id: run.runId,
      step_id: stepId,
      confirmed_result_ids: [...update.confirmedResultIds],
      result_ids: [...set.resultIds],
      added_result_ids: [...update.addedResultIds],
      removed_result_ids: [...update.removedResultIds],
    });
  }
  return { items, resultIds: [...set.resultIds], update };
}

/** `next`, or {@link SILENT} once `signal` has been aborted for `afterStopMs` without it settling. */
function nextWithin<R>(next: Promise<R>, signal: AbortSignal, afterStopMs: number): Promise<R | typeof SILENT> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const silent = new Promise<typeof SILENT>((resolve) => {
    onAbort = () => (timer = setTimeout(() => resolve(SILENT), afterStopMs));
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  return Promise.race([next, silent]).finally(() => {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort!);
  });
}

/** How `resultIds` differs from the set a Stop confirmed. */
function updateOf(confirmed: ConfirmedResults, resultIds: readonly string[]): ResultSetUpdate {
  const before = new Set(confirmed.resultIds);
  const after = new Set(resultIds);
  return {
    confirmedResultIds: [...confirmed.resultIds],
    addedResultIds: resultIds.filter((id) => !before.has(id)),
    removedResultIds: confirmed.resultIds.filter((id) => !after.has(id)),
  };
}
