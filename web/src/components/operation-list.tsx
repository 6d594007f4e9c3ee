/**
 * The thread's external operations with their true status: what waits for approval, what was
 * already handed to the external system (a Stop cannot call it back), and what nobody knows yet.
 */
import type { OperationView, PendingApproval } from "../../../src/client/index.js";

export interface OperationListProps {
  operations: readonly OperationView[];
  pendingApproval: PendingApproval | null;
  /** Runs a Stop reached: their handed-over operations are reported as such. */
  stoppedRunIds: ReadonlySet<string>;
  busyAction: string | null;
  onApprove(): void;
  onReject(): void;
  onConfirm(opId: string, outcome: "committed" | "not_committed"): void;
}

type Tone = "" | "ok" | "warn" | "danger";

function phaseText(operation: OperationView, isAwaitingApproval: boolean, isStopped: boolean): { text: string; tone: Tone } {
  switch (operation.phase) {
    case "prepared":
      return isAwaitingApproval
        ? { text: "Waiting for your approval · not sent", tone: "warn" }
        : { text: "Prepared · not handed to the external system", tone: "" };
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

function previewText(preview: unknown): string {
  if (preview === null || preview === undefined) return "";
  return typeof preview === "string" ? preview : JSON.stringify(preview, null, 2);
}

/** One card per operation; the approval card comes first while the run waits. */
export function OperationList(props: OperationListProps) {
  const pending = props.pendingApproval;
  const isBusy = props.busyAction !== null;
  const listed = props.operations.some((operation) => operation.op_id === pending?.opId);
  if (props.operations.length === 0 && !pending) return null;
  return (
    <section className="panel" aria-labelledby="operations-title">
      <h3 id="operations-title">External actions</h3>
      {pending && !listed && (
        <ApprovalCard tool={pending.tool} preview={pending.preview} isBusy={isBusy} busyAction={props.busyAction} onApprove={props.onApprove} onReject={props.onReject} />
      )}
      {props.operations.map((operation) => {
        const isAwaitingApproval = pending?.opId === operation.op_id && operation.phase === "prepared";
        const status = phaseText(operation, isAwaitingApproval, props.stoppedRunIds.has(operation.run_id));
        if (isAwaitingApproval) {
          return (
            <ApprovalCard
              key={operation.op_id}
              tool={operation.tool}
              preview={operation.preview ?? pending?.preview}
              isBusy={isBusy}
              busyAction={props.busyAction}
              onApprove={props.onApprove}
              onReject={props.onReject}
            />
          );
        }
        return (
          <div key={operation.op_id} className="operation" data-op-id={operation.op_id} data-phase={operation.phase}>
            <div className="operation-head">
              <code>{operation.tool}</code>
              <span className={`badge ${status.tone}`}>{status.text}</span>
            </div>
            {previewText(operation.preview) && <pre>{previewText(operation.preview)}</pre>}
            {operation.phase === "outcome_unknown" && (
              <div className="actions" role="group" aria-label={`Did ${operation.tool} happen?`}>
                <button type="button" onClick={() => props.onConfirm(operation.op_id, "committed")} disabled={isBusy}>
                  It happened
                </button>
                <button type="button" onClick={() => props.onConfirm(operation.op_id, "not_committed")} disabled={isBusy}>
                  It did not happen
                </button>
              </div>
            )}
          </div>
        );
      })}
    </section>
  );
}

interface ApprovalCardProps {
  tool: string;
  preview: unknown;
  isBusy: boolean;
  busyAction: string | null;
  onApprove(): void;
  onReject(): void;
}

function ApprovalCard(props: ApprovalCardProps) {
  return (
    <div className="operation" data-phase="awaiting_approval">
      <div className="operation-head">
        <code>{props.tool}</code>
        <span className="badge warn">Waiting for your approval · not sent</span>
      </div>
      {previewText(props.preview) && <pre>{previewText(props.preview)}</pre>}
      <div className="actions" role="group" aria-label={`Approve or reject ${props.tool}`}>
        <button type="button" className="primary" onClick={props.onApprove} disabled={props.isBusy} aria-label={`Approve ${props.tool}`}>
          {props.busyAction === "approve" ? "Approving…" : "Approve"}
        </button>
        <button type="button" onClick={props.onReject} disabled={props.isBusy} aria-label={`Reject ${props.tool}`}>
          {props.busyAction === "reject" ? "Rejecting…" : "Reject"}
        </button>
      </div>
    </div>
  );
}
