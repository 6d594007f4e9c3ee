import type { RunEvent, RunEventDraft, RunRecord } from "../core/index.js";
import type { EventHub } from "../stream/index.js";

/**
 * Appends to the run's buffer; the first event of every attempt is `run.started`. `onEvent` sees
 * each appended event (a scaled deployment writes it to the shared log).
 */
export function createRunEmitter(hub: EventHub, run: RunRecord, onEvent?: (event: RunEvent) => void): (draft: RunEventDraft) => void {
  // Resolved once: this closure sits on the per-token path.
  const buffer = hub.ensure(run.tenantId, run.runId, run.attempt);
  const append = (draft: RunEventDraft): void => {
    const event = buffer.append(draft);
    onEvent?.(event);
  };
  return (draft) => {
    if (buffer.terminalEvent) return;
    if (buffer.isEmpty && draft.type !== "run.started") {
      append({ type: "run.started", run_id: run.runId, thread_id: run.threadId, attempt: run.attempt, status: run.status });
    }
    append(draft);
  };
}
