/** "Delete this thread?": a thread and its history are gone for good, so the user confirms first. */
import { useEffect, useRef } from "react";

export interface DeleteThreadDialogProps {
  title: string;
  isBusy: boolean;
  onConfirm(): void;
  onCancel(): void;
}

/** A modal dialog (native `<dialog>`); Cancel has the focus and Escape cancels: the safe choice. */
export function DeleteThreadDialog(props: DeleteThreadDialogProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const element = dialog.current;
    if (element && !element.open) {
      element.showModal();
      cancel.current?.focus();
    }
    return () => element?.close();
  }, []);
  return (
    <dialog
      ref={dialog}
      aria-labelledby="delete-title"
      aria-describedby="delete-text"
      onCancel={(event) => {
        event.preventDefault();
        props.onCancel();
      }}
    >
      <h2 id="delete-title">Delete “{props.title}”?</h2>
      <p id="delete-text">The thread and its whole history are deleted for good. An answer still being written is stopped first.</p>
      <div className="actions">
        <button type="button" ref={cancel} onClick={props.onCancel} disabled={props.isBusy}>
          Cancel
        </button>
        <button type="button" className="danger" onClick={props.onConfirm} disabled={props.isBusy}>
          {props.isBusy ? "Deleting…" : "Delete the thread"}
        </button>
      </div>
    </dialog>
  );
}
