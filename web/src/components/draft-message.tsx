/** The answer being streamed: temporary text, visibly not part of the saved history. */
import type { ChatDraft } from "../../../src/client/index.js";
import { MarkdownText } from "./markdown-text.js";

export interface DraftMessageProps {
  draft: ChatDraft;
  /** The Stop has not reached the server yet: the answer may still be finished and saved there. */
  isStopUnconfirmed: boolean;
}

/** Streaming: "not saved yet"; stopped: "not saved" — it will never be published. A saved draft shows as its fragment instead. */
export function DraftMessage({ draft, isStopUnconfirmed }: DraftMessageProps) {
  if (draft.status === "saved") return null;
  const isStreaming = draft.status === "streaming";
  const badge = isStreaming
    ? "Draft · not saved yet"
    : isStopUnconfirmed
      ? "Stop not confirmed yet · the server may still finish and save this answer"
      : "Stopped · not saved, not part of the history";
  return (
    <li
      className="message assistant draft"
      data-draft-status={draft.status}
      aria-label={isStreaming ? "Draft answer, not saved yet" : isStopUnconfirmed ? "Stopped draft, Stop not confirmed yet" : "Stopped draft, not saved"}
    >
      <div className="message-role">
        <span className="role-name">Assistant</span>
        <span className={`badge ${isStreaming ? "" : "warn"}`}>{badge}</span>
      </div>
      <div className="message-text markdown">
        <MarkdownText text={draft.text} tail={isStreaming ? <span className="caret" aria-hidden="true" /> : undefined} />
      </div>
    </li>
  );
}
