/**
 * A compatibility layer's "resume" of a run paused before a consequential tool (AG-UI's `resume`,
 * LangGraph's `Command({resume})`): the thread's paused run is approved or rejected and the same
 * native run goes on; its events after the pause are what the layer streams as its new run.
 */
import { TidemarkError, type RunRecord, type ThreadRecord } from "../../core/index.js";
import type { Runtime } from "../../runtime/index.js";
import type { RunEventBuffer } from "../../stream/index.js";

/** Approve or reject, as the layer read its client's answer for the paused run. */
export type ResumeDecision = "approved" | "rejected";

/**
 * Decides the thread's run waiting for an approval with what `decide` reads for it (it may throw
 * a refusal); 409 `run_not_interrupted` when no run of the thread waits.
 */
export async function resumePausedRun(
  runtime: Runtime,
  tenantId: string,
  thread: ThreadRecord,
  decide: (paused: RunRecord) => ResumeDecision,
): Promise<RunRecord> {
  const paused = thread.activeRunId === null ? undefined : await runtime.store.getRun(tenantId, thread.activeRunId);
  if (!paused || paused.status !== "interrupted") throw new TidemarkError("run_not_interrupted", "No run of this thread is waiting for an approval.");
  return runtime.decide(tenantId, paused.runId, decide(paused));
}

/** A resume payload read as an approval: `true` / `{approved: true}`, `false` / `{approved: false}`; anything else is undefined. */
export function approvalOf(payload: unknown): boolean | undefined {
  if (typeof payload === "boolean") return payload;
  const approved = typeof payload === "object" && payload !== null && !Array.isArray(payload) ? (payload as { approved?: unknown }).approved : undefined;
  return typeof approved === "boolean" ? approved : undefined;
}

/** The seq of the run's last `run.interrupted` event in the buffer (0 when none): a resumed run streams what comes after it. */
export function lastInterruptSeq(buffer: RunEventBuffer): number {
  let seq = 0;
  for (const event of buffer.eventsBetween(buffer.firstSeq - 1, buffer.lastSeq)) if (event.type === "run.interrupted") seq = event.seq;
  return seq;
}
