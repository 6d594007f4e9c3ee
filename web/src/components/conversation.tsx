/**
 * The conversation: the saved history (published messages, labelled fragments, where a Stop
 * interrupted an answer, and each external operation where its tool call was made) and, apart
 * from it, the draft being streamed.
 */
import { useEffect, useRef, type ReactNode } from "react";
import type { ChatDraft, HistoryMarker, MessageView, OperationView, PendingApproval } from "../../../src/client/index.js";
import { conversationItems, type ConversationItem } from "../conversation-items.js";
import { DraftMessage } from "./draft-message.js";
import { InterruptedMarker } from "./interrupted-marker.js";
import { MessageItem } from "./message-item.js";
import { OperationCard } from "./operation-card.js";

export interface ConversationProps {
  /** A new thread (or its first load) starts at its newest message. */
  threadId: string | null;
  history: readonly MessageView[];
  markers: readonly HistoryMarker[];
  operations: readonly OperationView[];
  pendingApproval: PendingApproval | null;
  /** Runs a Stop reached: their handed-over operations are reported as such. */
  stoppedRunIds: ReadonlySet<string>;
  draft: ChatDraft | null;
  isStopUnconfirmed: boolean;
  /** The run is working but has streamed nothing yet. */
  isWaiting: boolean;
  isBusy: boolean;
  onConfirm(opId: string, outcome: "committed" | "not_committed"): void;
  /** The plan of a plan agent's run, shown after the saved messages (its finished sections are among them). */
  plan?: ReactNode;
  /** What is shown under the messages (panels after a Stop, notices). */
  children?: ReactNode;
  /** Changes when what is shown under the messages changes (a panel appears), to keep it in view. */
  tailKey: string;
}

/** The scrolling list of messages; it keeps the newest in view while the user has not scrolled away. */
export function Conversation(props: ConversationProps) {
  const { threadId, history, draft, isWaiting, tailKey } = props;
  const scroller = useRef<HTMLDivElement>(null);
  const shownThread = useRef<string | null>(null);
  /** Whether the view is at the end (kept there as content grows) or the user scrolled up to read. */
  const isPinned = useRef(true);
  const draftLength = draft?.text.length ?? 0;
  useEffect(() => {
    const element = scroller.current;
    if (!element) return;
    const isFirstView = history.length > 0 && shownThread.current !== threadId;
    if (isFirstView) shownThread.current = threadId;
    // To the very end: the panels under the messages (after a Stop) stay in view too.
    if (isFirstView || isPinned.current) element.scrollTop = element.scrollHeight;
  }, [threadId, history.length, props.markers.length, props.operations.length, draftLength, isWaiting, tailKey]);

  // The view shrinks when something below it grows (the agent picker, a panel above the field):
  // one that was at the end stays there.
  useEffect(() => {
    const element = scroller.current;
    if (!element || typeof ResizeObserver === "undefined") return;
    const observer = new ResizeObserver(() => {
      if (isPinned.current) element.scrollTop = element.scrollHeight;
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, []);

  function onScroll(): void {
    const element = scroller.current;
    if (element) isPinned.current = element.scrollHeight - element.scrollTop - element.clientHeight < 80;
  }

  const isEmpty = history.length === 0 && !draft && !isWaiting && !props.pendingApproval && !props.plan;
  const items = conversationItems({
    history,
    markers: props.markers,
    operations: props.operations,
    pendingApproval: props.pendingApproval,
    draftRunId: draft?.status === "stopped" ? draft.runId : null,
  });
  return (
    <div className="conversation-body" ref={scroller} tabIndex={0} role="region" aria-label="Conversation" onScroll={onScroll}>
      {isEmpty ? (
        <div className="empty">
          <p>Nothing here yet. Write a message below.</p>
          <p className="thread-meta">You can stop an answer at any time; what was not finished is never saved as if it were.</p>
        </div>
      ) : (
        <ol className="messages" aria-label="Messages">
          {items.map((item) => renderItem(item, props))}
          {props.plan && <li className="plan-item">{props.plan}</li>}
          {draft && <DraftMessage draft={draft} isStopUnconfirmed={props.isStopUnconfirmed} />}
          {isWaiting && !draft && (
            <li className="message assistant draft" aria-label="Waiting for the answer">
              <div className="message-role">
                <span className="role-name">Assistant</span>
                <span className="badge">Working…</span>
              </div>
              <span className="caret" aria-hidden="true" />
            </li>
          )}
        </ol>
      )}
      {props.children}
    </div>
  );
}

function renderItem(item: ConversationItem, props: ConversationProps): ReactNode {
  switch (item.kind) {
    case "message":
      return <MessageItem key={item.message.message_id} message={item.message} />;
    case "interrupted":
      return <InterruptedMarker key={item.marker.checkpoint_id} discardedChars={item.marker.discarded_stream_chars} />;
    case "operation":
      return (
        <OperationCard
          key={item.operation.op_id}
          tool={item.operation.tool}
          operation={item.operation}
          preview={item.operation.preview ?? (props.pendingApproval?.opId === item.operation.op_id ? props.pendingApproval.preview : null)}
          result={item.result}
          isAwaitingApproval={props.pendingApproval?.opId === item.operation.op_id}
          isStopped={props.stoppedRunIds.has(item.operation.run_id)}
          isBusy={props.isBusy}
          onConfirm={props.onConfirm}
        />
      );
    case "approval":
      return (
        <OperationCard
          key={item.approval.opId}
          tool={item.approval.tool}
          operation={null}
          preview={item.approval.preview}
          result={null}
          isAwaitingApproval
          isStopped={false}
          isBusy={props.isBusy}
          onConfirm={props.onConfirm}
        />
      );
  }
}
