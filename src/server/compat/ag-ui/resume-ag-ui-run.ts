import { TidemarkError, type RunRecord, type ThreadRecord } from "../../../core/index.js";
import type { Runtime } from "../../../runtime/index.js";
import { approvalOf, resumePausedRun } from "../resume-paused-run.js";
import type { AgUiResumeEntry } from "./ag-ui-input.js";

/**
 * A request with `resume` answers the interrupt its previous AG-UI run ended on (a consequential
 * tool waiting for approval): `resolved` approves it (unless the payload is `false` or
 * `{approved: false}`), `cancelled` rejects it. The same native run then goes on; no new run starts.
 */
export function resumeAgUiRun(runtime: Runtime, tenantId: string, thread: ThreadRecord, entries: readonly AgUiResumeEntry[]): Promise<RunRecord> {
  return resumePausedRun(runtime, tenantId, thread, (paused) => {
    const entry = entries.find((candidate) => candidate.interruptId === paused.activeOperation);
    if (!entry) throw new TidemarkError("invalid_request", "resume answers no interrupt of this thread: its interruptId is the operation waiting for approval.");
    return entry.status !== "cancelled" && approvalOf(entry.payload) !== false ? "approved" : "rejected";
  });
}
