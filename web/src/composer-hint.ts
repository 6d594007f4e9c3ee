import type { ChatSnapshot } from "../../src/client/index.js";
import type { StopView } from "./stop-view.js";

/** Why the message field cannot send now, or what Stop does, under the field; null: the keyboard help. */
export function composerHint(snapshot: ChatSnapshot | null, stops: StopView, isPlan = false): string | null {
  const run = snapshot?.run;
  if (!run) return null;
  if (snapshot.conflict) return "The thread changed elsewhere: reload it or start a branch first.";
  if (stops.isPending || run.isCancelling) return "Stopping… the thread can be used again as soon as the run has really stopped.";
  if (run.isAwaitingApproval) return "The run waits for your decision above. Stop also works.";
  if (run.isRunning && isPlan) return "The plan is running. Stop (or Esc) cuts the steps in progress; completed sections are kept.";
  if (run.isRunning) return "The answer is being written. Stop (or Esc) ends it; nothing unfinished is saved.";
  return null;
}
