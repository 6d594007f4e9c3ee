/**
 * The voice mode screen of a thread: the microphone's state and controls, the live timeline (what
 * the user said, and each agent message as played, with what was heard vs discarded after a
 * barge-in), and the typed fallback: a field whose text is sent as a whole utterance.
 */
import { useEffect, useRef, useState, type FormEvent } from "react";
import type { VoiceSession, VoiceSnapshot } from "../voice/voice-session.js";
import { agentMessagePhase, agentMessageText } from "../voice/voice-state.js";
import { VoiceAgentMessage } from "./voice-agent-message.js";

export interface VoicePanelProps {
  session: VoiceSession;
  snapshot: VoiceSnapshot;
}

const MICROPHONE_TEXT: Record<VoiceSnapshot["microphone"], string> = {
  starting: "Starting the microphone…",
  listening: "Listening",
  hearing: "Hearing you…",
  muted: "Microphone muted",
  off: "Microphone off",
  failed: "Microphone unavailable",
};

/** The whole voice screen (it takes the conversation's and the composer's place). */
export function VoicePanel({ session, snapshot }: VoicePanelProps) {
  const [typed, setTyped] = useState("");
  const { voice, microphone } = snapshot;
  const isOpen = voice.connection === "open";
  const playing = voice.entries.find((entry) => entry.kind === "agent" && agentMessagePhase(entry) === "playing");
  const scroller = useRef<HTMLDivElement>(null);
  /** Whether the view follows the newest words, or the user scrolled up to read. */
  const isPinned = useRef(true);
  const shownChars = voice.entries.reduce((total, entry) => total + (entry.kind === "agent" ? agentMessageText(entry).heard.length : entry.transcript.length), 0);
  useEffect(() => {
    const element = scroller.current;
    if (element && isPinned.current) element.scrollTop = element.scrollHeight;
  }, [voice.entries.length, shownChars]);

  function onScroll(): void {
    const element = scroller.current;
    if (element) isPinned.current = element.scrollHeight - element.scrollTop - element.clientHeight < 80;
  }

  function onSubmit(event: FormEvent): void {
    event.preventDefault();
    if (typed.trim() === "" || !isOpen) return;
    session.sendTyped(typed);
    setTyped("");
  }

  return (
    <section className="voice-panel" aria-label="Voice mode">
      <div className="voice-bar">
        <p className={`voice-mic ${microphone}`} data-microphone={microphone} data-utterances={snapshot.utterances}>
          <span className="voice-dot" aria-hidden="true" />
          {MICROPHONE_TEXT[microphone]}
        </p>
        <p className="thread-meta" data-connection={voice.connection}>
          {voice.connection === "open" ? "Live" : voice.connection === "connecting" ? "Connecting…" : "Disconnected"}
        </p>
        <div className="actions">
          <button
            type="button"
            aria-pressed={microphone === "muted"}
            disabled={microphone === "starting" || microphone === "off" || microphone === "failed"}
            onClick={() => session.setMuted(microphone !== "muted")}
          >
            {microphone === "muted" ? "Unmute the microphone" : "Mute the microphone"}
          </button>
          <label className="voice-output">
            <input
              type="checkbox"
              checked={snapshot.outputMode === "speech"}
              disabled={!snapshot.canSpeak}
              onChange={(event) => session.setOutputMode(event.target.checked ? "speech" : "text")}
            />
            Speak answers aloud{snapshot.canSpeak ? "" : " (no voices here: shown as text)"}
          </label>
          <button type="button" className="danger" disabled={!isOpen || !playing} onClick={() => session.emergencyStop()}>
            Stop the agent
          </button>
        </div>
      </div>
      {snapshot.microphoneError && (
        <div className="panel error" role="alert">
          <p>{snapshot.microphoneError} You can still type what you say below.</p>
        </div>
      )}
      {voice.closed && (
        <div className="panel error" role="alert">
          <p>
            {voice.closed.wasOpen ? "The live connection closed." : "The live connection could not be opened."} Leave voice mode and enter it again to
            reconnect.
          </p>
        </div>
      )}
      {voice.error && (
        <div className="panel error" role="alert" data-voice-error={voice.error.code}>
          <p>{voice.error.message}</p>
          <div className="actions">
            <button type="button" onClick={() => session.dismissError()}>
              Dismiss
            </button>
          </div>
        </div>
      )}
      <div className="conversation-body" ref={scroller} role="region" aria-label="Voice conversation" tabIndex={0} onScroll={onScroll}>
        {voice.entries.length === 0 ? (
          <div className="empty">
            <p>Say something, or type it below.</p>
            <p className="thread-meta">Speak over the answer to interrupt it: only what you heard is saved.</p>
          </div>
        ) : (
          <ol className="messages" aria-label="Voice messages">
            {voice.entries.map((entry) =>
              entry.kind === "user" ? (
                <li key={entry.key} className="message user" data-voice-user>
                  <div className="message-role">
                    <span className="role-name">You</span>
                  </div>
                  <div className="message-text plain">{entry.transcript}</div>
                </li>
              ) : (
                <VoiceAgentMessage key={entry.messageId} message={entry} isPaused={voice.isOutputPaused && entry === playing} />
              ),
            )}
          </ol>
        )}
      </div>
      <div className="composer">
        {snapshot.recognitionUnavailable && (
          <p className="dock" data-typed-fallback>
            Speech recognition is not available here ({snapshot.recognitionUnavailable}): type what you say.
          </p>
        )}
        <form onSubmit={onSubmit} aria-label="Type what you say">
          <label htmlFor="voice-typed" className="visually-hidden">
            What you say
          </label>
          <input id="voice-typed" type="text" maxLength={16_000} value={typed} placeholder="Type what you say…" onChange={(event) => setTyped(event.target.value)} />
          <button type="submit" className="primary" disabled={!isOpen || typed.trim() === ""}>
            Say it
          </button>
        </form>
      </div>
      <p className="visually-hidden" role="status">
        {MICROPHONE_TEXT[microphone]}
        {voice.isOutputPaused ? " · the answer is paused" : ""}
      </p>
    </section>
  );
}
