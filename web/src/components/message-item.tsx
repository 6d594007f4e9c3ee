/** One message of the saved history: a user input, a published answer, a tool result or a saved fragment. */
import type { MessageView } from "../../../src/client/index.js";

export interface MessageItemProps {
  message: MessageView;
}

const ROLE_LABEL: Record<MessageView["role"], string> = { user: "You", assistant: "Assistant", system: "System", tool: "Tool" };

/** A fragment is labelled as such: it is what the user saw of a stopped answer, never a finished one. */
export function MessageItem({ message }: MessageItemProps) {
  const isFragment = message.publication_status === "fragment";
  const role = message.role === "tool" && message.tool_name ? `Tool · ${message.tool_name}` : ROLE_LABEL[message.role];
  const toolCalls = message.tool_calls ?? [];
  return (
    <li className={`message ${message.role}${isFragment ? " fragment" : ""}`} data-message-id={message.message_id} data-status={message.publication_status}>
      <div className="message-role">
        <span>{role}</span>
        {isFragment && <span className="badge warn">Saved fragment of a stopped answer</span>}
      </div>
      {message.content && <div className="message-text">{message.content}</div>}
      {toolCalls.map((call) => (
        <div key={call.tool_call_id} className="thread-meta">
          Asked to use <code>{call.tool_name}</code>
        </div>
      ))}
    </li>
  );
}
