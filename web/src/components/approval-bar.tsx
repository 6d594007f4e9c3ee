/** The decision a waiting run needs, by the message field so that it is always in view. */
import type { PendingApproval } from "../../../src/client/index.js";
import { humanLabel } from "../readable.js";

export interface ApprovalBarProps {
  approval: PendingApproval;
  busyAction: string | null;
  onApprove(): void;
  onReject(): void;
}

/** "The assistant wants to: Send email" with Approve and Reject; the details are in the card above. */
export function ApprovalBar({ approval, busyAction, onApprove, onReject }: ApprovalBarProps) {
  const label = humanLabel(approval.tool);
  const isBusy = busyAction !== null;
  return (
    <div className="dock approval" role="group" aria-label={`Approve or reject: ${label}`}>
      <p>
        The assistant wants to: <strong>{label}</strong>. Nothing is sent until you approve.
      </p>
      <div className="actions">
        <button type="button" className="primary" onClick={onApprove} disabled={isBusy} aria-label={`Approve ${label.toLowerCase()}`}>
          {busyAction === "approve" ? "Approving…" : "Approve"}
        </button>
        <button type="button" onClick={onReject} disabled={isBusy} aria-label={`Reject ${label.toLowerCase()}`}>
          {busyAction === "reject" ? "Rejecting…" : "Reject"}
        </button>
      </div>
    </div>
  );
}
