/**
 * One external operation where it happened in the conversation, with its true status: waiting
 * for approval, already handed to the external system (a Stop cannot call it back), done, or
 * unknown (the user says whether it happened). Previews and results read as labelled fields.
 */
import type { MessageView, OperationView } from "../../../src/client/index.js";
import { asTime, humanLabel, parseJsonText } from "../readable.js";
import { ReadableFields } from "./readable-fields.js";

export interface OperationCardProps {
  tool: string;
  /** The ledger's row; null while the run's approval request is known only from its event. */
  operation: OperationView | null;
  preview: unknown;
  /** The tool's result message, when history has it. */
  result: MessageView | null;
  isAwaitingApproval: boolean;
  /** A Stop reached the operation's run: a handed-over operation is reported as such. */
  isStopped: boolean;
  isBusy: boolean;
  onConfirm(opId: string, outcome: "committed" | "not_committed"): void;
}

type Tone = "" | "ok" | "warn" | "danger";

function phaseText(operation: OperationView | null, isAwaitingApproval: boolean, isStopped: boolean): { text: string; tone: Tone } {
  if (operation === null || (isAwaitingApproval && operation.phase === "prepared")) return { text: "Waiting for your approval · not sent", tone: "warn" };
  switch (operation.phase) {
    case "prepared":
      return { text: "Prepared · not handed to the external system", tone: "" };
    case "committing":
      return isStopped
        ? { text: "Already handed to the external system · the Stop cannot call it back; waiting for its outcome", tone: "warn" }
        : { text: "Being handed to the external system…", tone: "warn" };
    case "committed":
      return isStopped
        ? { text: "Already handed to the external system before the Stop took effect · it happened", tone: "warn" }
        : { text: "Done · the external system accepted it", tone: "ok" };
    case "failed":
      return { text: `Failed · the external system refused it${operation.error ? `: ${operation.error}` : ""}`, tone: "danger" };
    case "abandoned":
      return { text: "Not sent · rejected, or stopped before it was handed over", tone: "" };
    case "outcome_unknown":
      return { text: "Outcome unknown · it may or may not have happened; please confirm", tone: "danger" };
  }
}

/** The card; approving and rejecting happen by the message field, where they stay in view. */
export function OperationCard(props: OperationCardProps) {
  const { operation } = props;
  const status = phaseText(operation, props.isAwaitingApproval, props.isStopped);
  const label = humanLabel(props.tool);
  const phase = operation === null || (props.isAwaitingApproval && operation.phase === "prepared") ? "awaiting_approval" : operation.phase;
  const result = operation?.result ?? (props.result ? parseJsonText(props.result.content) : null);
  const when = operation ? asTime("updated_at", operation.updated_at) : null;
  return (
    <li className="operation" data-op-id={operation?.op_id} data-phase={phase} aria-label={`External action: ${label}`}>
      <div className="operation-head">
        <span className="operation-tool">{label}</span>
        <span className={`badge ${status.tone}`}>{status.text}</span>
        {when && <time dateTime={operation!.updated_at}>{when}</time>}
      </div>
      {props.preview != null && (
        <div className="operation-part">
          <h4>{phase === "committed" ? "What was sent" : "What it will do"}</h4>
          <ReadableFields value={props.preview} />
        </div>
      )}
      {result != null && phase !== "awaiting_approval" && (
        <div className="operation-part">
          <h4>Result</h4>
          <ReadableFields value={result} />
        </div>
      )}
      {phase === "awaiting_approval" && <p className="thread-meta">Approve or reject it by the message field below.</p>}
      {operation?.phase === "outcome_unknown" && (
        <div className="actions" role="group" aria-label={`Did ${label} happen?`}>
          <button type="button" onClick={() => props.onConfirm(operation.op_id, "committed")} disabled={props.isBusy}>
            It happened
          </button>
          <button type="button" onClick={() => props.onConfirm(operation.op_id, "not_committed")} disabled={props.isBusy}>
            It did not happen
          </button>
        </div>
      )}
    </li>
  );
}
