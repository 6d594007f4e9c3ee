/** A refused action or a failed background read, said plainly, with a way out. */
export interface ErrorNoticeProps {
  message: string;
  onDismiss(): void;
  onReload?: () => void;
}

/** An alert the user can dismiss (or answer with a reload). */
export function ErrorNotice({ message, onDismiss, onReload }: ErrorNoticeProps) {
  return (
    <div className="panel error" role="alert">
      <p>{message}</p>
      <div className="actions">
        {onReload && (
          <button type="button" onClick={onReload}>
            Reload the thread
          </button>
        )}
        <button type="button" onClick={onDismiss}>
          Dismiss
        </button>
      </div>
    </div>
  );
}
