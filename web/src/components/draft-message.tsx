/** The answer being streamed: temporary text, visibly not part of the saved history. */
import type { ChatDraft } from "../../../src/client/index.js";

export interface DraftMessageProps {
  draft: ChatDraft;
}

/** Streaming: "not saved yet"; stopped: "not saved" — it will never be published. A saved draft shows as its fragment instead. */
export function DraftMessage({ draft }: DraftMessageProps) {
  if (draft.status === "saved") return null;
  const isStreaming = draft.status === "streaming";
  return (
    <li className="message assistant draft" data-draft-status={draft.status} aria-label={isStreaming ? "Draft answer, not saved yet" : "Stopped draft, not saved"}>
      <div className="message-role">
        <span>Assistant</span>
        <span className={`badge ${isStreaming ? "" : "warn"}`}>
          {isStreaming ? "Draft · not saved yet" : "Stopped · not saved, not part of the history"}
        </span>
      </div>
      <div className="message-text">
        {draft.text}
        {isStreaming && <span className="caret" aria-hidden="true" />}
      </div>
    </li>
  );
}
