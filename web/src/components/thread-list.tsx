/**
 * The sidebar: the tenant's threads (newest first) and the button that starts a new one (created
 * on its first message). On a phone it is a drawer over the conversation, opened from the header.
 */
import { useEffect, useRef, type KeyboardEvent, type ReactNode } from "react";
import type { ThreadView } from "../../../src/client/index.js";
import { threadTitle } from "../thread-title.js";
import { ThreadListItem } from "./thread-list-item.js";

export interface ThreadListProps {
  threads: readonly ThreadView[];
  selectedThreadId: string | null;
  hasMore: boolean;
  isLoading: boolean;
  error: string | null;
  /** On a phone: whether the drawer is open (on a wide screen the list is always shown). */
  isOpen: boolean;
  /** Shown above the list (e.g. the API key form). */
  children?: ReactNode;
  onClose(): void;
  onSelect(threadId: string): void;
  onCreate(): void;
  onLoadMore(): void;
  onRename(threadId: string, title: string): Promise<boolean>;
  onDelete(thread: ThreadView, title: string): void;
}

/** Lists threads; the open one is marked `aria-current`. */
export function ThreadList(props: ThreadListProps) {
  const firstControl = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    // An opened drawer takes the focus, so a keyboard or screen reader user is in it.
    if (props.isOpen) firstControl.current?.focus();
  }, [props.isOpen]);

  function onKeyDown(event: KeyboardEvent<HTMLElement>): void {
    if (event.key === "Escape" && props.isOpen) {
      event.preventDefault();
      props.onClose();
    }
  }

  return (
    <aside id="thread-drawer" className="sidebar" aria-label="Threads" onKeyDown={onKeyDown}>
      <div className="brand">
        <span>
          Tidemark
          <small>Stop, continue and branch, honestly.</small>
        </span>
        <button type="button" className="drawer-close" onClick={props.onClose} aria-label="Close the thread list">
          <span aria-hidden="true">✕</span>
        </button>
      </div>
      <button type="button" className="primary" ref={firstControl} onClick={props.onCreate}>
        New thread
      </button>
      {props.children}
      {/* Polite: the conversation's own notices say what the user must act on. */}
      {props.error && (
        <p role="status" className="thread-meta">
          {props.threads.length > 0 ? "The list may be out of date: " : "Could not load the threads: "}
          {props.error}
        </p>
      )}
      <nav aria-label="Your threads">
        <ul className="thread-list">
          {props.threads.map((thread) => (
            <ThreadListItem
              key={thread.thread_id}
              thread={thread}
              title={threadTitle(props.threads, thread.thread_id)}
              isSelected={thread.thread_id === props.selectedThreadId}
              onSelect={props.onSelect}
              onRename={props.onRename}
              onDelete={props.onDelete}
            />
          ))}
        </ul>
        {!props.isLoading && props.threads.length === 0 && !props.error && <p className="thread-meta">No threads yet.</p>}
      </nav>
      {props.hasMore && (
        <button type="button" className="link" onClick={props.onLoadMore} disabled={props.isLoading}>
          Show older threads
        </button>
      )}
    </aside>
  );
}
