/**
 * What the plan view says about a run's steps: each step's outcome in words (never by colour
 * alone), the steps as a tree by parent, and a one-line summary of where the plan is, including
 * after a Stop (what was kept, what was cut, what never began) and after a Continue (what was
 * kept from the stopped run).
 */
import { isPlanRun, type ChatDraft, type ChatSnapshot, type PlanState, type PlanStep, type RunPhase } from "../../src/client/index.js";

/** A step's outcome as the page tells it apart. */
export type StepOutcome =
  | "not_started"
  | "in_progress"
  | "stopping"
  | "waiting"
  | "completed"
  | "reused"
  | "failed"
  | "cut"
  | "never_started"
  | "stopped_waiting";

/** The badge of each outcome: its words, and its tone (colour only repeats the words). */
export const OUTCOME_BADGE: Readonly<Record<StepOutcome, { text: string; tone: "" | "ok" | "warn" | "danger" | "active" }>> = {
  not_started: { text: "Not started", tone: "" },
  in_progress: { text: "In progress", tone: "active" },
  stopping: { text: "Stopping…", tone: "warn" },
  waiting: { text: "Waiting for its steps", tone: "active" },
  completed: { text: "Completed", tone: "ok" },
  reused: { text: "Completed · kept from the stopped run", tone: "ok" },
  failed: { text: "Failed", tone: "danger" },
  cut: { text: "Cancelled · cut by the Stop", tone: "warn" },
  never_started: { text: "Cancelled · never started", tone: "" },
  stopped_waiting: { text: "Cancelled · its own work is kept", tone: "" },
};

/** The outcome of `step`; `finishing`: the steps the server said are still winding down after a Stop. */
export function stepOutcome(step: PlanStep, finishing: readonly string[]): StepOutcome {
  switch (step.status) {
    case "not_started":
      return "not_started";
    case "in_progress":
      return finishing.includes(step.stepId) ? "stopping" : "in_progress";
    case "children_in_progress":
      return "waiting";
    case "completed":
      return step.isReused ? "reused" : "completed";
    case "failed":
      return "failed";
    case "cancelled":
      if (!step.hasStarted) return "never_started";
      return step.isOwnWorkDone ? "stopped_waiting" : "cut";
  }
}

/** A step with the steps it added. */
export interface StepNode {
  step: PlanStep;
  children: StepNode[];
}

/** The steps as a tree by parent, in planned order; a step whose parent is unknown is a root. */
export function stepTree(steps: readonly PlanStep[]): StepNode[] {
  const nodes = new Map(steps.map((step) => [step.stepId, { step, children: [] as StepNode[] }]));
  const roots: StepNode[] = [];
  for (const node of nodes.values()) {
    const parent = node.step.parentStepId === null ? undefined : nodes.get(node.step.parentStepId);
    if (parent && parent !== node) parent.children.push(node);
    else roots.push(node);
  }
  return roots;
}

/** How many steps have each outcome. */
export function outcomeCounts(plan: PlanState): Record<StepOutcome, number> {
  const counts = Object.fromEntries(Object.keys(OUTCOME_BADGE).map((outcome) => [outcome, 0])) as Record<StepOutcome, number>;
  for (const step of plan.steps) counts[stepOutcome(step, plan.finishing)] += 1;
  return counts;
}

/** Where the whole plan is: from the session's run when it is this plan's, else from the last read of it. */
export function planPhase(plan: PlanState, runStatus: RunPhase | null): "running" | "stopping" | "stopped" | "completed" | "failed" {
  const status = runStatus ?? plan.runStatus;
  switch (status) {
    case "cancel_requested":
    case "cancelling":
      return "stopping";
    case "cancelled":
      return "stopped";
    case "completed":
      return "completed";
    case "failed":
      return "failed";
    default:
      return "running";
  }
}

/** One line on where the plan is (also what the status line announces). */
export function planSummary(plan: PlanState, phase: ReturnType<typeof planPhase>): string {
  const counts = outcomeCounts(plan);
  const total = plan.steps.length;
  const done = counts.completed + counts.reused;
  const kept = counts.reused > 0 ? `; ${counts.reused} kept from the stopped run` : "";
  const parts = (entries: [number, string][]): string =>
    entries
      .filter(([count]) => count > 0)
      .map(([count, words]) => `${count} ${words}`)
      .join(", ");
  switch (phase) {
    case "running":
      if (total === 0) return "Planning…";
      return [
        `${done} of ${total} steps completed${kept}.`,
        parts([
          [counts.in_progress, "in progress"],
          [counts.waiting, "waiting for their steps"],
          [counts.not_started, "not started yet"],
        ]),
      ]
        .filter(Boolean)
        .join(" ");
    case "stopping":
      return `Stopping: ${parts([
        [done, "completed"],
        [counts.stopping + counts.in_progress, "still finishing"],
        [counts.cut, "cut"],
        [counts.never_started, "never started"],
      ])}.`;
    case "stopped":
      return `Stopped: ${parts([
        [done, "completed and kept"],
        [counts.cut, "cut while in progress"],
        [counts.never_started, "never started"],
      ])}. Continue runs only the steps that did not complete.`;
    case "completed":
      return `Completed: ${done} steps${kept}.`;
    case "failed":
      return `Failed: ${parts([
        [done, "completed"],
        [counts.failed, "failed"],
        [counts.cut + counts.never_started, "cancelled"],
      ])}.`;
  }
}

/** What the page shows of the snapshot's plan, or null when its run is no plan (the chat loop). */
export interface PlanPresentation {
  plan: PlanState;
  phase: ReturnType<typeof planPhase>;
  summary: string;
  /** For the status line: the count while it runs, the summary once it stopped; null otherwise. */
  statusText: string | null;
  /** Whether the streaming draft is shown: only a step running alone (the synthesis) streams its text in the conversation. */
  showsDraft(draft: ChatDraft): boolean;
  /** The labelled message a completed step published, if history holds it. */
  sectionOf(step: PlanStep): string | null;
}

/** The {@link PlanPresentation} of `snapshot`. */
export function planPresentation(snapshot: ChatSnapshot | null): PlanPresentation | null {
  if (!snapshot || !isPlanRun(snapshot) || snapshot.plan === null) return null;
  const { plan, run } = snapshot;
  const phase = planPhase(plan, run.runId === plan.runId ? run.status : null);
  const summary = planSummary(plan, phase);
  const counts = outcomeCounts(plan);
  const inProgress = counts.in_progress + counts.stopping;
  const sectionIds = new Set<string>();
  const byCheckpoint = new Map<string, string>();
  for (const message of snapshot.history) {
    if (message.label == null) continue;
    sectionIds.add(message.message_id);
    byCheckpoint.set(message.checkpoint_id, message.message_id);
  }
  return {
    plan,
    phase,
    summary,
    statusText:
      phase === "running" && plan.steps.length > 0
        ? `The plan is running: ${counts.completed + counts.reused} of ${plan.steps.length} steps completed.`
        : phase === "stopped"
          ? summary
          : null,
    // Several steps stream at once, and a Stop's cut steps are listed in the plan: neither is one draft.
    showsDraft: (draft) => draft.status === "streaming" && inProgress <= 1,
    sectionOf: (step) =>
      step.messageId !== null && sectionIds.has(step.messageId) ? step.messageId : step.checkpointId === null ? null : (byCheckpoint.get(step.checkpointId) ?? null),
  };
}
