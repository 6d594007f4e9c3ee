/**
 * The plan of a run of a plan agent (DESIGN §11): its steps as a tree (the steps a step added
 * are nested under it), each with its outcome in words, and a line on where the plan is. After a
 * Stop it tells the steps that completed (their sections stay in the conversation) from the ones
 * cut in progress and the ones that never began; after a Continue it marks the steps kept from the
 * stopped run.
 */
import { useId } from "react";
import type { PlanState, PlanStep } from "../../../src/client/index.js";
import { OUTCOME_BADGE, stepOutcome, stepTree, type StepNode } from "../plan-outline.js";

export interface PlanViewProps {
  plan: PlanState;
  phase: "running" | "stopping" | "stopped" | "completed" | "failed";
  summary: string;
  /** The message a completed step published (its section in the conversation), if it is loaded. */
  sectionOf(step: PlanStep): string | null;
  onShowSection(messageId: string): void;
}

/** The plan as a list, inside the conversation. */
export function PlanView(props: PlanViewProps) {
  const titleId = useId();
  const { plan } = props;
  // Once the answer is there, the steps fold away under their summary (open them to read them again).
  const isFolded = props.phase === "completed";
  return (
    <section className={`plan ${props.phase}`} aria-labelledby={titleId} data-run-id={plan.runId} data-phase={props.phase}>
      <h3 id={titleId}>Plan{plan.agent ? ` · ${plan.agent}` : ""}</h3>
      <details open={!isFolded} key={String(isFolded)}>
        <summary className="plan-summary">{props.summary}</summary>
        {plan.steps.length > 0 && <StepList nodes={stepTree(plan.steps)} label="Steps of the plan" {...props} />}
      </details>
    </section>
  );
}

function StepList({ nodes, label, ...props }: { nodes: readonly StepNode[]; label: string } & PlanViewProps) {
  return (
    <ol className="plan-steps" aria-label={label}>
      {nodes.map((node) => (
        <StepItem key={node.step.stepId} node={node} {...props} />
      ))}
    </ol>
  );
}

function StepItem({ node, ...props }: { node: StepNode } & PlanViewProps) {
  const { step } = node;
  const outcome = stepOutcome(step, props.plan.finishing);
  const badge = OUTCOME_BADGE[outcome];
  const title = step.title ?? step.stepId;
  const section = step.status === "completed" ? props.sectionOf(step) : null;
  return (
    <li className="plan-step" data-step-id={step.stepId} data-status={step.status} data-outcome={outcome} data-started={step.hasStarted}>
      <div className="plan-step-row">
        <span className="step-title">{title}</span>
        <span className={`badge step-badge ${badge.tone}`}>{badge.text}</span>
        {section && (
          <button type="button" className="link" onClick={() => props.onShowSection(section)} aria-label={`Read the section: ${title}`}>
            Read
          </button>
        )}
      </div>
      {step.error && step.status === "failed" && <p className="thread-meta">{step.error}</p>}
      {node.children.length > 0 && <StepList nodes={node.children} label={`Steps of ${title}`} {...props} />}
    </li>
  );
}
