/**
 * The visible text mode: the message appears word by word at a reading pace, and what appeared
 * is what is acked. The default where the browser has no voices (headless chromium has none).
 */
import type { MessagePlayer, PlayerCallbacks } from "./message-player.js";
import { nextWordEnd, revealDelayMs } from "./playback-acks.js";

/** About 300 words a minute: a reading pace, a little faster than speech. */
export const READING_CHARS_PER_SECOND = 25;

/** A text player; `startAt` characters count as shown already (a speech player handed over mid-message). */
export function createTextPlayer(callbacks: PlayerCallbacks, options: { charsPerSecond?: number; startAt?: number } = {}): MessagePlayer {
  const charsPerSecond = options.charsPerSecond ?? READING_CHARS_PER_SECOND;
  let text = "";
  let isComplete = false;
  let revealed = options.startAt ?? 0;
  let isPaused = false;
  let isStopped = false;
  let isFinished = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function step(): void {
    if (timer !== undefined || isPaused || isStopped || isFinished) return;
    const end = nextWordEnd(text, revealed, isComplete);
    if (end > revealed) {
      timer = setTimeout(function revealNextWord() {
        timer = undefined;
        if (isPaused || isStopped) return;
        revealed = end;
        callbacks.onProgress(revealed);
        step();
      }, revealDelayMs(end - revealed, charsPerSecond));
      return;
    }
    if (isComplete && revealed >= text.length) {
      isFinished = true;
      callbacks.onProgress(text.length);
      callbacks.onFinished();
    }
  }

  return {
    update(nextText, nextIsComplete) {
      text = nextText;
      isComplete = nextIsComplete;
      step();
    },
    pause() {
      isPaused = true;
      clearTimeout(timer);
      timer = undefined;
    },
    resume() {
      isPaused = false;
      step();
    },
    stop() {
      isStopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
