/**
 * What the page shows about Stops, from the session's snapshot: whether the "Stopped" panel
 * belongs here (never a branch's replay of the Stop of the thread it came from), whether the
 * last Stop is still unconfirmed, or came too late.
 */
import type { ChatSnapshot, HistoryMarker } from "../../src/client/index.js";

export interface StopView {
  /** The panel after a Stop: `stopping` while it winds down, `stopped` once it has ended, or none. */
  panel: "stopping" | "stopped" | null;
  /** The Stop has not reached the server yet. */
  isUnconfirmed: boolean;
  /** A Stop is on its way (sent, retried, or accepted but not over). */
  isPending: boolean;
  /** The Stop came too late: the run completed and its answer is saved. */
  isTooLate: boolean;
  /** On a branch that starts at the Stop of the thread it came from: that Stop is the origin's story, not this thread's. */
  isOriginsStop: boolean;
}

type Interrupted = Extract<HistoryMarker, { type: "interrupted_response" }>;

/** Derives the {@link StopView} of `snapshot`. */
export function stopView(snapshot: ChatSnapshot | null): StopView {
  if (!snapshot) return { panel: null, isUnconfirmed: false, isPending: false, isTooLate: false, isOriginsStop: false };
  const { run, stop, forkedFrom } = snapshot;
  const isPending = stop !== null && stop.status !== "confirmed" && stop.runId === run.runId;
  const lastStop = snapshot.markers.filter((marker): marker is Interrupted => marker.type === "interrupted_response").at(-1);
  const isOriginsStop = forkedFrom !== null && run.status === "idle" && snapshot.resumePoint !== null && (lastStop?.state_version ?? 0) <= forkedFrom.state_version;
  const isTooLate = (stop?.outcome === "completed" || snapshot.lastCancel?.already_terminal === true) && run.status === "completed";
  let panel: StopView["panel"] = null;
  if (run.isCancelling || stop?.status === "accepted") panel = "stopping";
  else if (run.status === "cancelled") panel = "stopped";
  else if (run.status === "idle" && snapshot.resumePoint !== null && !isOriginsStop) panel = "stopped";
  return { panel, isUnconfirmed: isPending && stop?.status === "unconfirmed", isPending, isTooLate, isOriginsStop };
}
