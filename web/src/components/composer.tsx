/** Where the user writes; Send while idle, Stop while a run is going. */
import { useState, type FormEvent, type KeyboardEvent, type RefObject } from "react";

export interface ComposerProps {
  inputRef: RefObject<HTMLTextAreaElement | null>;
  canSend: boolean;
  canStop: boolean;
  isStopping: boolean;
  /** Why sending is not possible now (shown under the field). */
  hint: string | null;
  onSend(text: string): Promise<boolean>;
  onStop(): void;
}

/** Enter sends, Shift+Enter adds a line, Escape stops; the text stays until the send was accepted. */
export function Composer(props: ComposerProps) {
  const [text, setText] = useState("");
  const isEmpty = text.trim().length === 0;

  async function send(): Promise<void> {
    if (isEmpty || !props.canSend) return;
    const sent = text;
    if (await props.onSend(sent)) setText((current) => (current === sent ? "" : current));
  }

  function onSubmit(event: FormEvent): void {
    event.preventDefault();
    void send();
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>): void {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    } else if (event.key === "Escape" && props.canStop && !props.isStopping) {
      event.preventDefault();
      props.onStop();
    }
  }

  return (
    <div className="composer">
      <form onSubmit={onSubmit} aria-label="Send a message">
        <label htmlFor="composer-input" className="visually-hidden">
          Message
        </label>
        <textarea
          id="composer-input"
          ref={props.inputRef}
          value={text}
          rows={2}
          placeholder="Write a message…"
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
          aria-describedby="composer-hint"
        />
        {props.canStop ? (
          <button type="button" className="danger" onClick={props.onStop} disabled={props.isStopping}>
            {props.isStopping ? "Stopping…" : "Stop"}
          </button>
        ) : (
          <button type="submit" className="primary" disabled={isEmpty || !props.canSend}>
            Send
          </button>
        )}
      </form>
      <p className="composer-hint" id="composer-hint">
        {props.hint ?? "Enter sends · Shift+Enter adds a line · Esc stops a run"}
      </p>
    </div>
  );
}
