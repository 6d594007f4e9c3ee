/**
 * A player for one agent message in the chosen output mode: spoken (falling back to the visible
 * text mode, from the last ack, should the synthesizer fail mid-message) or shown as text.
 */
import type { MessagePlayer, PlayerCallbacks } from "./message-player.js";
import { createSpeechPlayer } from "./speech-player.js";
import { createTextPlayer } from "./text-player.js";

/** How agent messages are played. */
export type OutputMode = "speech" | "text";

/** The player of one message; `onSpeechFailed` hears that the synthesizer failed (the rest is then shown as text). */
export function createMessagePlayer(
  mode: OutputMode,
  callbacks: PlayerCallbacks & { onSpeechFailed(): void },
  speech: { synthesis: SpeechSynthesis | null; voice: SpeechSynthesisVoice | null },
): MessagePlayer {
  const { synthesis } = speech;
  if (mode === "text" || !synthesis) return createTextPlayer(callbacks);
  let text = "";
  let isComplete = false;
  let isPaused = false;
  let inner: MessagePlayer = createSpeechPlayer(
    {
      ...callbacks,
      onFailed(playedChars) {
        inner = createTextPlayer(callbacks, { startAt: playedChars });
        if (isPaused) inner.pause();
        inner.update(text, isComplete);
        callbacks.onSpeechFailed();
      },
    },
    { synthesis, voice: speech.voice },
  );
  return {
    update(nextText, nextIsComplete) {
      text = nextText;
      isComplete = nextIsComplete;
      inner.update(text, isComplete);
    },
    pause() {
      isPaused = true;
      inner.pause();
    },
    resume() {
      isPaused = false;
      inner.resume();
    },
    stop() {
      inner.stop();
    },
  };
}
