import { TidemarkError, type RunRecord, type ThreadRecord } from "../../../core/index.js";
import type { Runtime } from "../../../runtime/index.js";
import type { AgUiResumeEntry } from "./ag-ui-input.js";

/**
 * A request with `resume` answers the interrupt its previous AG-UI run ended on (a consequential
 * tool waiting for approval): `resolved` approves it (unless the payload is `false` or
 * `{approved: false}`), `cancelled` rejects it. The same native run then goes on; no new run starts.
 */
export async function resumeAgUiRun(runtime: Runtime, tenantId: string, thread: ThreadRecord, entries: readonly AgUiResumeEntry[]): Promise<RunRecord> {
  const paused = thread.activeRunId === null ? undefined : await runtime.store.getRun(tenantId, thread.activeRunId);
  if (!paused || paused.status !== "interrupted") throw new TidemarkError("run_not_interrupted", "No run of this thread is waiting for an approval.");
  const entry = entries.find((candidate) => candidate.interruptId === paused.activeOperation);
  if (!entry) throw new TidemarkError("invalid_request", "resume answers no interrupt of this thread: its interruptId is the operation waiting for approval.");
  return runtime.decide(tenantId, paused.runId, isApproval(entry) ? "approved" : "rejected");
}

function isApproval(entry: AgUiResumeEntry): boolean {
  if (entry.status === "cancelled" || entry.payload === false) return false;
  const payload = entry.payload as { approved?: unknown } | null | undefined;
  return !(typeof payload === "object" && payload !== null && payload.approved === false);
}
