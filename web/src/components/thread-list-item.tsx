/** One thread in the sidebar: open it, or (behind its "…" button) rename or delete it. */
import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from "react";
import type { ThreadView } from "../../../src/client/index.js";

export interface ThreadListItemProps {
  thread: ThreadView;
  title: string;
  isSelected: boolean;
  onSelect(threadId: string): void;
  /** Resolves true once the server took the new title. */
  onRename(threadId: string, title: string): Promise<boolean>;
  onDelete(thread: ThreadView, title: string): void;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** The row; its actions stay hidden until asked for, so the list stays calm. */
export function ThreadListItem({ thread, title, isSelected, onSelect, onRename, onDelete }: ThreadListItemProps) {
  const [mode, setMode] = useState<"closed" | "actions" | "renaming">("closed");
  const [draftTitle, setDraftTitle] = useState(title);
  const [isSaving, setIsSaving] = useState(false);
  const field = useRef<HTMLInputElement>(null);
  const toggle = useRef<HTMLButtonElement>(null);
  const actionsId = useId();

  useEffect(() => {
    if (mode === "renaming") field.current?.select();
  }, [mode]);

  function close(): void {
    setMode("closed");
    toggle.current?.focus();
  }

  async function submit(event: FormEvent): Promise<void> {
    event.preventDefault();
    if (draftTitle.trim().length === 0 || isSaving) return;
    setIsSaving(true);
    const isRenamed = await onRename(thread.thread_id, draftTitle.trim());
    setIsSaving(false);
    if (isRenamed) close();
  }

  function onFieldKey(event: KeyboardEvent<HTMLInputElement>): void {
    if (event.key === "Escape") {
      event.preventDefault();
      close();
    }
  }

  return (
    <li className="thread-item">
      <div className="thread-row">
        <button type="button" className="thread-open" aria-current={isSelected ? "page" : undefined} onClick={() => onSelect(thread.thread_id)}>
          <span className="thread-title">{title}</span>
          <span className="thread-meta">
            {thread.status === "busy" ? "running · " : ""}
            {thread.forked_from ? "branch · " : ""}
            {timeFormat.format(new Date(thread.updated_at))}
          </span>
        </button>
        <button
          type="button"
          ref={toggle}
          className="thread-more"
          aria-label={`Rename or delete “${title}”`}
          aria-expanded={mode !== "closed"}
          aria-controls={actionsId}
          onClick={() => (mode === "closed" ? setMode("actions") : setMode("closed"))}
        >
          <span aria-hidden="true">⋯</span>
        </button>
      </div>
      <div id={actionsId} hidden={mode === "closed"}>
        {mode === "actions" && (
          <div className="actions thread-actions" role="group" aria-label={`Actions for “${title}”`}>
            <button
              type="button"
              onClick={() => {
                setDraftTitle(title);
                setMode("renaming");
              }}
            >
              Rename
            </button>
            <button type="button" className="danger" onClick={() => onDelete(thread, title)}>
              Delete…
            </button>
          </div>
        )}
        {mode === "renaming" && (
          <form className="rename-form" onSubmit={(event) => void submit(event)}>
            <label htmlFor={`${actionsId}-title`}>New title</label>
            <input
              id={`${actionsId}-title`}
              ref={field}
              type="text"
              maxLength={200}
              value={draftTitle}
              onChange={(event) => setDraftTitle(event.target.value)}
              onKeyDown={onFieldKey}
            />
            <div className="actions">
              <button type="submit" className="primary" disabled={isSaving || draftTitle.trim().length === 0}>
                {isSaving ? "Saving…" : "Save"}
              </button>
              <button type="button" onClick={close}>
                Cancel
              </button>
            </div>
          </form>
        )}
      </div>
    </li>
  );
}
