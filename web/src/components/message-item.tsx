/** One message of the saved history: a user input, a published answer, a tool result or a saved fragment. */
import type { MessageView } from "../../../src/client/index.js";
import { humanLabel, parseJsonText } from "../readable.js";
import { MarkdownText } from "./markdown-text.js";
import { ReadableFields } from "./readable-fields.js";

export interface MessageItemProps {
  message: MessageView;
}

const ROLE_LABEL: Record<MessageView["role"], string> = { user: "You", assistant: "Assistant", system: "System", tool: "Tool" };

/**
 * A fragment is labelled as such: it is what the user saw of a stopped answer, never a finished
 * one; so is a live answer cut by a barge-in (only its heard part was published). A labelled message (a plan's finished section) is a section titled by its label.
 */
export function MessageItem({ message }: MessageItemProps) {
  if (message.label !== null && message.label !== undefined && message.publication_status === "published") return <SectionItem message={message} />;
  const isFragment = message.publication_status === "fragment";
  const role = message.role === "tool" && message.tool_name ? `Tool · ${humanLabel(message.tool_name)}` : ROLE_LABEL[message.role];
  const toolCalls = message.tool_calls ?? [];
  return (
    <li className={`message ${message.role}${isFragment ? " fragment" : ""}`} data-message-id={message.message_id} data-status={message.publication_status}>
      <div className="message-role">
        <span className="role-name">{role}</span>
        {isFragment && message.format !== "json" && <span className="badge warn">Saved fragment of a stopped answer</span>}
        {isFragment && message.format === "json" && <span className="badge warn">Unfinished object, stopped · not usable for execution</span>}
        {message.interrupted && <span className="badge warn">Interrupted in voice mode · saved as far as it was heard</span>}
      </div>
      {message.content && <MessageContent message={message} />}
      {toolCalls.map((call) => (
        <div key={call.tool_call_id} className="thread-meta">
          Asked to use {humanLabel(call.tool_name)}
        </div>
      ))}
    </li>
  );
}

/** One finished section of a plan: its label is its title; focusable, so the plan view can take the reader to it. */
function SectionItem({ message }: MessageItemProps) {
  const titleId = `section-title-${message.message_id}`;
  return (
    <li
      className="message assistant section"
      id={`section-${message.message_id}`}
      tabIndex={-1}
      aria-labelledby={titleId}
      data-message-id={message.message_id}
      data-status={message.publication_status}
      data-label={message.label}
    >
      <div className="message-role">
        <span className="role-name">Section</span>
        <span className="badge ok">Finished</span>
      </div>
      <h3 className="section-title" id={titleId}>
        {message.label}
      </h3>
      <MessageContent message={message} />
    </li>
  );
}

/** Answers are markdown; the user's words are shown as typed; a tool's JSON as labelled fields. */
function MessageContent({ message }: MessageItemProps) {
  if (message.role === "user") return <div className="message-text plain">{message.content}</div>;
  // A published object as labelled fields; a fragment of one stays raw text: it never parsed.
  if (message.role === "tool" || (message.format === "json" && message.publication_status === "published")) {
    const value = parseJsonText(message.content);
    return <div className="message-text">{typeof value === "object" && value !== null ? <ReadableFields value={value} /> : message.content}</div>;
  }
  return (
    <div className="message-text markdown">
      <MarkdownText text={message.content} />
    </div>
  );
}
