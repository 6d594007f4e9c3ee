/**
 * A Stop that has not reached the server yet, said once: the answer may still be finished and
 * saved there. The session keeps sending it (a cancel is idempotent) until the server answers.
 */
export interface StopNoticeProps {
  /** Why the last attempt got no reply. */
  failure: string | null;
}

/** One alert while the Stop is unconfirmed; the page shows the outcome when the server answers. */
export function StopNotice({ failure }: StopNoticeProps) {
  return (
    <div className="dock stop-unconfirmed" role="alert">
      <p>
        <strong>Stop not confirmed yet.</strong> {failure ?? "The server did not answer."} The Stop is sent again until the server answers;
        until then the answer may still be finished and saved.
      </p>
    </div>
  );
}
