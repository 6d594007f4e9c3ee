/** On a branch: where it came from, with a way back, and (while nothing happened on it yet) the stopped answer's Continue. */
import type { MouseEvent } from "react";

export interface BranchOriginProps {
  origin: { thread_id: string; checkpoint_id: string; state_version: number };
  /** The original thread's title; null while unknown or when it was deleted. */
  originTitle: string | null;
  isOriginDeleted: boolean;
  /** The branch starts at a stopped answer and nothing happened on it yet: offer to continue that answer here. */
  canContinue: boolean;
  isBusy: boolean;
  onOpenOrigin(threadId: string): void;
  onContinue(): void;
}

/** A line under the header: "Branch of “…”", linking back. */
export function BranchOrigin(props: BranchOriginProps) {
  const { origin } = props;
  const name = props.originTitle ? `“${props.originTitle}”` : "the original thread";
  function open(event: MouseEvent<HTMLAnchorElement>): void {
    event.preventDefault();
    props.onOpenOrigin(origin.thread_id);
  }
  return (
    <div className="branch-origin" role="note" aria-label="Where this branch came from">
      <span>
        Branch of{" "}
        {props.isOriginDeleted ? (
          `${name} (deleted since)`
        ) : (
          <a href={`/threads/${encodeURIComponent(origin.thread_id)}`} onClick={open}>
            {name}
          </a>
        )}
        . Both threads stay as they are.
      </span>
      {props.canContinue && (
        <button type="button" onClick={props.onContinue} disabled={props.isBusy}>
          Continue the stopped answer here
        </button>
      )}
    </div>
  );
}
