/**
 * The spoken mode: the message is read aloud by `speechSynthesis`, a sentence per utterance as
 * sentences arrive, and each word `boundary` event acks the words before it (an utterance's `end`
 * acks all of it). Pausing pauses the synthesizer; stopping cancels it at once.
 */
import type { MessagePlayer, PlayerCallbacks } from "./message-player.js";
import { boundaryAck, nextSpeechSegment, type SpeechSegment } from "./playback-acks.js";

/** A speech player; `onFailed` hears a synthesis error (the caller then shows the rest as text from the last ack). */
export function createSpeechPlayer(
  callbacks: PlayerCallbacks & { onFailed(playedChars: number): void },
  options: { synthesis: SpeechSynthesis; voice: SpeechSynthesisVoice | null },
): MessagePlayer {
  const { synthesis } = options;
  let text = "";
  let isComplete = false;
  let queuedUpTo = 0;
  let played = 0;
  let speaking = 0;
  let isStopped = false;
  let isFinished = false;

  const report = (chars: number): void => {
    if (isStopped || chars <= played) return;
    played = chars;
    callbacks.onProgress(played);
  };

  function finishIfDone(): void {
    if (isStopped || isFinished || !isComplete || speaking > 0 || nextSpeechSegment(text, queuedUpTo, true)) return;
    isFinished = true;
    played = text.length;
    callbacks.onProgress(played);
    callbacks.onFinished();
  }

  function speak(segment: SpeechSegment): void {
    const utterance = new SpeechSynthesisUtterance(text.slice(segment.start, segment.end));
    if (options.voice) {
      utterance.voice = options.voice;
      utterance.lang = options.voice.lang;
    }
    utterance.onboundary = (event) => {
      if (event.name === "word") report(boundaryAck(segment, event.charIndex));
    };
    utterance.onend = () => {
      speaking--;
      report(segment.end);
      finishIfDone();
    };
    utterance.onerror = (event) => {
      speaking--;
      // A cancel (ours) is not a failure; anything else is: the rest is shown as text instead.
      if (isStopped || event.error === "canceled" || event.error === "interrupted") return;
      isStopped = true;
      synthesis.cancel();
      callbacks.onFailed(played);
    };
    speaking++;
    synthesis.speak(utterance);
  }

  function feed(): void {
    if (isStopped) return;
    for (let segment = nextSpeechSegment(text, queuedUpTo, isComplete); segment; segment = nextSpeechSegment(text, queuedUpTo, isComplete)) {
      speak(segment);
      queuedUpTo = segment.end;
    }
    finishIfDone();
  }

  return {
    update(nextText, nextIsComplete) {
      text = nextText;
      isComplete = nextIsComplete;
      feed();
    },
    pause() {
      if (!isStopped) synthesis.pause();
    },
    resume() {
      if (!isStopped) synthesis.resume();
    },
    stop() {
      if (isStopped) return;
      isStopped = true;
      synthesis.cancel();
    },
  };
}
