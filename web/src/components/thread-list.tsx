/** The sidebar: the tenant's threads (newest first) and the button that starts a new one (created on its first message). */
import type { ReactNode } from "react";
import type { ThreadView } from "../../../src/client/index.js";
import { threadTitle } from "../thread-title.js";

export interface ThreadListProps {
  threads: readonly ThreadView[];
  selectedThreadId: string | null;
  hasMore: boolean;
  isLoading: boolean;
  error: string | null;
  /** Shown above the list (e.g. the API key form). */
  children?: ReactNode;
  onSelect(threadId: string): void;
  onCreate(): void;
  onLoadMore(): void;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

/** Lists threads; the open one is marked `aria-current`. */
export function ThreadList(props: ThreadListProps) {
  return (
    <aside className="sidebar" aria-label="Threads">
      <div className="brand">
        Tidemark
        <small>Stop, continue and branch, honestly.</small>
      </div>
      <button type="button" className="primary" onClick={props.onCreate}>
        New thread
      </button>
      {props.children}
      {props.error && (
        <p role="alert" className="thread-meta">
          Could not load the threads: {props.error}
        </p>
      )}
      <nav aria-label="Your threads">
        <ul className="thread-list">
          {props.threads.map((thread) => (
            <li key={thread.thread_id}>
              <button
                type="button"
                aria-current={thread.thread_id === props.selectedThreadId ? "page" : undefined}
                onClick={() => props.onSelect(thread.thread_id)}
              >
                <span className="thread-title">{threadTitle(props.threads, thread.thread_id)}</span>
                <span className="thread-meta">
                  {thread.status === "busy" ? "running · " : ""}
                  {thread.forked_from ? "branch · " : ""}
                  {timeFormat.format(new Date(thread.updated_at))}
                </span>
              </button>
            </li>
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
