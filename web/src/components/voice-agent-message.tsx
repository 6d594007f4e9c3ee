/**
 * One agent message in voice mode. While it plays, only what was played is shown (the visible
 * text mode acks exactly what it showed). After a barge-in, what the user heard (the published
 * prefix) stands apart from what was sent but never heard, struck through: that part is
 * discarded, never saved.
 */
import { agentMessagePhase, agentMessageText, type AgentMessage } from "../voice/voice-state.js";

export interface VoiceAgentMessageProps {
  message: AgentMessage;
  /** The output is paused (the user may be interrupting) and this is the message playing. */
  isPaused: boolean;
}

const REASONS: Record<string, string> = {
  user_speech: "you spoke",
  emergency_stop: "stopped at once",
  false_interruption: "paused too long",
  stopped: "stopped",
  disconnected: "disconnected",
};

/** The message, its phase as a badge, and after an interruption the heard and discarded parts. */
export function VoiceAgentMessage({ message, isPaused }: VoiceAgentMessageProps) {
  const phase = agentMessagePhase(message);
  const { heard, discarded } = agentMessageText(message);
  const badge = phaseBadge(message, isPaused);
  return (
    <li className={`message assistant voice-message ${phase}`} data-message-id={message.messageId} data-phase={phase}>
      <div className="message-role">
        <span className="role-name">Assistant</span>
        <span className={`badge ${badge.tone}`}>{badge.text}</span>
      </div>
      <div className="message-text plain">
        <span className="voice-heard" data-voice-heard>
          {heard}
        </span>
        {discarded && (
          <del className="voice-discarded" data-voice-discarded aria-label={`Discarded, never heard: ${discarded}`}>
            {discarded}
          </del>
        )}
        {phase === "playing" && <span className="caret" aria-hidden="true" />}
      </div>
      {message.interruption && (
        <p className="thread-meta" data-voice-interruption>
          Heard {heard.length} characters, saved as an interrupted answer · {discarded.length} sent but not heard, discarded
        </p>
      )}
    </li>
  );
}

function phaseBadge(message: AgentMessage, isPaused: boolean): { text: string; tone: string } {
  switch (agentMessagePhase(message)) {
    case "interrupted":
      return { text: `Interrupted (${REASONS[message.interruption!.reason] ?? message.interruption!.reason}) · only what you heard is saved`, tone: "warn" };
    case "published":
      return { text: "Heard to the end · saved", tone: "ok" };
    case "played":
      return { text: "Heard to the end · saving", tone: "" };
    case "playing":
      return isPaused ? { text: "Paused · you may be interrupting", tone: "warn" } : { text: "Speaking…", tone: "active" };
  }
}
