/**
 * The conversation: the saved history (published messages, labelled fragments, and where a Stop
 * interrupted an answer) and, apart from it, the draft being streamed.
 */
import { useEffect, useRef, type ReactNode } from "react";
import type { ChatDraft, HistoryMarker, MessageView } from "../../../src/client/index.js";
import { DraftMessage } from "./draft-message.js";
import { InterruptedMarker } from "./interrupted-marker.js";
import { MessageItem } from "./message-item.js";

export interface ConversationProps {
  /** A new thread (or its first load) starts at its newest message. */
  threadId: string | null;
  history: readonly MessageView[];
  markers: readonly HistoryMarker[];
  draft: ChatDraft | null;
  /** The run is working but has streamed nothing yet. */
  isWaiting: boolean;
  /** Changes when what is shown under the messages changes (a panel appears), to keep it in view. */
  tailKey: string;
}

type Interrupted = Extract<HistoryMarker, { type: "interrupted_response" }>;

/** Each "interrupted" marker goes after the messages saved before its Stop (by state version). */
function interleave(history: readonly MessageView[], markers: readonly HistoryMarker[]): ReactNode[] {
  const interrupted = markers.filter((marker): marker is Interrupted => marker.type === "interrupted_response");
  const items: ReactNode[] = [];
  let next = 0;
  for (const message of history) {
    while (next < interrupted.length && interrupted[next]!.state_version <= message.state_version) {
      const marker = interrupted[next++]!;
      items.push(<InterruptedMarker key={marker.checkpoint_id} discardedChars={marker.discarded_stream_chars} />);
    }
    items.push(<MessageItem key={message.message_id} message={message} />);
  }
  for (const marker of interrupted.slice(next)) {
    items.push(<InterruptedMarker key={marker.checkpoint_id} discardedChars={marker.discarded_stream_chars} />);
  }
  return items;
}

/** The list of messages; it keeps the newest in view while the user has not scrolled away. */
export function Conversation({ threadId, history, markers, draft, isWaiting, tailKey }: ConversationProps) {
  const end = useRef<HTMLDivElement>(null);
  const shownThread = useRef<string | null>(null);
  const draftLength = draft?.text.length ?? 0;
  useEffect(() => {
    const element = end.current;
    const scroller = element?.parentElement;
    if (!element || !scroller) return;
    const isFirstView = history.length > 0 && shownThread.current !== threadId;
    if (isFirstView) shownThread.current = threadId;
    const isNearEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 160;
    // To the very end: the panels under the messages (after a Stop, approvals) stay in view too.
    if (isFirstView || isNearEnd) scroller.scrollTop = scroller.scrollHeight;
  }, [threadId, history.length, markers.length, draftLength, isWaiting, tailKey]);

  if (history.length === 0 && !draft && !isWaiting) {
    return (
      <div className="empty">
        <p>Nothing here yet. Write a message below.</p>
        <p className="thread-meta">You can stop an answer at any time; what was not finished is never saved as if it were.</p>
      </div>
    );
  }
  return (
    <>
      <ol className="messages" aria-label="Messages">
        {interleave(history, markers)}
        {draft && <DraftMessage draft={draft} />}
        {isWaiting && !draft && (
          <li className="message assistant draft" aria-label="Waiting for the answer">
            <div className="message-role">
              <span>Assistant</span>
              <span className="badge">Working…</span>
            </div>
            <span className="caret" aria-hidden="true" />
          </li>
        )}
      </ol>
      <div ref={end} />
    </>
  );
}
