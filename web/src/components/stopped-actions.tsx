/**
 * After a Stop: only the actions the server can carry out (DESIGN §9): continue from the saved
 * point, change the request and continue, start a new branch, delete the draft (or the fragment
 * saved of it), and save what I saw. The draft above already says it was not saved; this panel
 * does not say it again.
 */
import { useEffect, useId, useRef, useState, type FormEvent } from "react";

export interface StoppedActionsProps {
  /** `stopping`: the Stop was accepted, the work is still winding down; `stopped`: it has ended. */
  phase: "stopping" | "stopped";
  /** The version a Continue builds on (it follows a fragment saved or deleted after the Stop). */
  resumeVersion: number | null;
  /** Work that cannot be interrupted and is still finishing. */
  activeOperation: string | null;
  /** The stopped answer's draft: still only on screen (`stopped`), saved as a fragment (`saved`), or none. */
  draftStatus: "streaming" | "stopped" | "saved" | null;
  canContinue: boolean;
  canChangeAndContinue: boolean;
  canBranch: boolean;
  canDeleteDraft: boolean;
  canSaveWhatISaw: boolean;
  /** The action being carried out (its buttons are disabled meanwhile). */
  busyAction: string | null;
  /** Move focus to the panel (after the user pressed Stop). */
  shouldFocus: boolean;
  onFocused(): void;
  onContinue(): void;
  onChangeAndContinue(text: string): Promise<boolean>;
  onBranch(): void;
  onDeleteDraft(): void;
  onSaveWhatISaw(): void;
}

/** The panel under the conversation once a run was stopped. */
export function StoppedActions(props: StoppedActionsProps) {
  const heading = useRef<HTMLHeadingElement>(null);
  const changeField = useRef<HTMLTextAreaElement>(null);
  const [isChanging, setIsChanging] = useState(false);
  const [changedText, setChangedText] = useState("");
  const fieldId = useId();
  const isBusy = props.busyAction !== null;
  const isSaved = props.draftStatus === "saved";

  const { shouldFocus, onFocused } = props;
  useEffect(() => {
    if (shouldFocus) {
      heading.current?.focus();
      onFocused();
    }
  }, [shouldFocus, onFocused]);

  useEffect(() => {
    if (isChanging) changeField.current?.focus();
  }, [isChanging]);

  async function submitChange(event: FormEvent): Promise<void> {
    event.preventDefault();
    if (changedText.trim().length === 0) return;
    if (await props.onChangeAndContinue(changedText)) {
      setIsChanging(false);
      setChangedText("");
    }
  }

  const label = (action: string, idle: string, busy: string): string => (props.busyAction === action ? busy : idle);
  const savedPoint = props.resumeVersion !== null && props.canContinue ? `The saved point is version ${props.resumeVersion} of the thread.` : "";

  return (
    <section className="panel stopped" aria-labelledby="stopped-title">
      <h3 id="stopped-title" ref={heading} tabIndex={-1}>
        {props.phase === "stopping" ? "Stopping…" : "Stopped"}
      </h3>
      {props.phase === "stopping" ? (
        <p>
          {props.activeOperation
            ? `The Stop is recorded. ${props.activeOperation} was already handed to the external system and cannot be called back; waiting for its outcome.`
            : "The Stop is recorded; waiting for the work to really stop."}
        </p>
      ) : (
        (isSaved || savedPoint) && (
          <p>
            {isSaved ? "What you saw is kept above as a labelled fragment, not as a finished answer. " : ""}
            {savedPoint}
          </p>
        )
      )}
      {props.phase === "stopped" && (
        <div className="actions" role="group" aria-label="What to do after the Stop">
          {props.canContinue && (
            <button type="button" className="primary" onClick={props.onContinue} disabled={isBusy}>
              {label("continue", "Continue from the saved point", "Continuing…")}
            </button>
          )}
          {props.canChangeAndContinue && (
            <button type="button" onClick={() => setIsChanging(true)} disabled={isBusy || isChanging} aria-expanded={isChanging} aria-controls={fieldId}>
              Change the request and continue
            </button>
          )}
          {props.canBranch && (
            <button type="button" onClick={props.onBranch} disabled={isBusy}>
              {label("branch", "Start a new branch", "Branching…")}
            </button>
          )}
          {props.canDeleteDraft && (
            <button type="button" className="danger" onClick={props.onDeleteDraft} disabled={isBusy}>
              {isSaved ? label("delete", "Delete the saved fragment", "Deleting…") : label("delete", "Delete the draft", "Deleting…")}
            </button>
          )}
          {props.canSaveWhatISaw && (
            <button type="button" onClick={props.onSaveWhatISaw} disabled={isBusy}>
              {label("save", "Save what I saw", "Saving…")}
            </button>
          )}
        </div>
      )}
      {isChanging && (
        <form className="change-request" onSubmit={(event) => void submitChange(event)}>
          <label htmlFor={fieldId}>The request as it should be</label>
          <p id={`${fieldId}-help`} className="thread-meta">
            It is sent as a new message after yours above (the history is never rewritten), and the answer starts again from the saved point,
            without the stopped text.
          </p>
          <textarea
            id={fieldId}
            ref={changeField}
            value={changedText}
            rows={3}
            placeholder="For example: the same, but shorter"
            aria-describedby={`${fieldId}-help`}
            onChange={(event) => setChangedText(event.target.value)}
          />
          <div className="actions">
            <button type="submit" className="primary" disabled={isBusy || changedText.trim().length === 0}>
              {label("change", "Send and continue", "Sending…")}
            </button>
            <button type="button" onClick={() => setIsChanging(false)} disabled={isBusy}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
