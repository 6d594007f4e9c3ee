import type { RunEventDraft, RunRecord } from "../core/index.js";
import type { EventHub } from "../stream/index.js";

/** Appends to the run's buffer; the first event of every attempt is `run.started`. */
export function createRunEmitter(hub: EventHub, run: RunRecord): (draft: RunEventDraft) => void {
  // Resolved once: this closure sits on the per-token path.
  const buffer = hub.ensure(run.tenantId, run.runId, run.attempt);
  return (draft) => {
    if (buffer.terminalEvent) return;
    if (buffer.isEmpty && draft.type !== "run.started") {
      buffer.append({ type: "run.started", run_id: run.runId, thread_id: run.threadId, attempt: run.attempt, status: run.status });
    }
    buffer.append(draft);
  };
}
