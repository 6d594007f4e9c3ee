/**
 * Where the user writes and acts: Send while idle, Stop while a run is going, and above the
 * field whatever needs a decision now (an approval, a Stop that is not confirmed yet). It is
 * always in view, on a phone too: only the conversation above it scrolls.
 */
import type { FormEvent, KeyboardEvent, ReactNode, RefObject } from "react";

export interface ComposerProps {
  inputRef: RefObject<HTMLTextAreaElement | null>;
  /** The text in the field (kept by the page, so that a message sent another way can clear it). */
  text: string;
  onTextChange(text: string): void;
  canSend: boolean;
  canStop: boolean;
  isStopping: boolean;
  /** Why sending is not possible now (shown under the field). */
  hint: string | null;
  onSend(text: string): void;
  onStop(): void;
  /** Shown above the field: decisions to take now. */
  children?: ReactNode;
  /** Shown right above the field, under the decisions: how the next message runs (the agent picker). */
  options?: ReactNode;
}

/** Enter sends, Shift+Enter adds a line, Escape stops; the text stays until the send was accepted. */
export function Composer(props: ComposerProps) {
  const isEmpty = props.text.trim().length === 0;

  function send(): void {
    if (!isEmpty && props.canSend) props.onSend(props.text);
  }

  function onSubmit(event: FormEvent): void {
    event.preventDefault();
    send();
  }

  function onKeyDown(event: KeyboardEvent<HTMLTextAreaElement>): void {
    if (event.key === "Enter" && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      send();
    } else if (event.key === "Escape" && props.canStop && !props.isStopping) {
      event.preventDefault();
      props.onStop();
    }
  }

  return (
    <div className="composer">
      {props.children}
      {props.options}
      <form onSubmit={onSubmit} aria-label="Send a message">
        <label htmlFor="composer-input" className="visually-hidden">
          Message
        </label>
        <textarea
          id="composer-input"
          ref={props.inputRef}
          value={props.text}
          rows={2}
          placeholder="Write a message…"
          onChange={(event) => props.onTextChange(event.target.value)}
          onKeyDown={onKeyDown}
          aria-describedby="composer-hint"
        />
        {props.canStop || props.isStopping ? (
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
