import type { ChatSnapshot } from "../../src/client/index.js";

/**
 * What the run is doing, for the status line screen readers announce (short: the screen shows the
 * details). `plan`: the plan view's line, said instead of the chat's words while a plan runs and
 * once it stopped.
 */
export function runStatusText(snapshot: ChatSnapshot | null, plan: string | null = null): string {
  if (!snapshot) return "";
  const { run, stop, draft } = snapshot;
  if (stop?.status === "unconfirmed") return "Stop not confirmed yet; trying again.";
  if (stop?.outcome === "completed") return "Too late to stop: the answer was completed and saved.";
  switch (run.status) {
    case "starting":
    case "queued":
      return "Sending…";
    case "running":
      if (stop) return "Stopping…";
      return plan ?? "The assistant is answering.";
    case "interrupted":
      return "The run waits for your approval.";
    case "cancel_requested":
    case "cancelling":
      return "Stopping…";
    case "cancelled":
      if (plan) return plan;
      return draft?.status === "saved" ? "Stopped. What you saw is saved as a fragment." : "Stopped.";
    case "completed":
      return "The answer is saved.";
    case "failed":
      return "The run failed.";
    default:
      return "";
  }
}
