/** A 409 `state_version_conflict`: the thread moved on elsewhere; reload it, or branch from where this tab stood. */
import { useEffect, useRef } from "react";

export interface ConflictDialogProps {
  isOpen: boolean;
  /** The version this tab built on, and the thread's current one. */
  expectedVersion: number | null;
  currentVersion: number | null;
  canBranch: boolean;
  isBusy: boolean;
  onReload(): void;
  onBranch(): void;
}

/** A modal dialog (native `<dialog>`: focus is trapped and Escape reloads, the safe choice). */
export function ConflictDialog(props: ConflictDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const reload = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (!element) return;
    if (props.isOpen && !element.open) {
      element.showModal();
      // The safe choice first: showModal alone would focus the dialog itself.
      reload.current?.focus();
    }
    if (!props.isOpen && element.open) element.close();
  }, [props.isOpen]);
  return (
    <dialog
      ref={dialog}
      aria-labelledby="conflict-title"
      aria-describedby="conflict-text"
      onCancel={(event) => {
        event.preventDefault();
        props.onReload();
      }}
    >
      <h2 id="conflict-title">This thread changed elsewhere</h2>
      <p id="conflict-text">
        Another tab or client continued this thread
        {props.expectedVersion !== null && props.currentVersion !== null
          ? ` (you were at version ${props.expectedVersion}, it is now at ${props.currentVersion})`
          : ""}
        . Nothing was sent. Reload to see what happened, or start a branch from the point you were at, so both stories stay.
      </p>
      <div className="actions">
        <button type="button" className="primary" ref={reload} onClick={props.onReload} disabled={props.isBusy}>
          Reload
        </button>
        <button type="button" onClick={props.onBranch} disabled={props.isBusy || !props.canBranch}>
          Start a branch
        </button>
      </div>
    </dialog>
  );
}
