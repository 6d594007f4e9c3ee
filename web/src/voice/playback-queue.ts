/**
 * Plays the agent's messages one after another, as the live socket's frames say: a message starts
 * when the one before it finished (or was interrupted), its player hears every new delta, pauses
 * on `output.paused`, resumes on `output.resumed`, and stops at once on `turn.interrupted` (what it
 * had not played yet is dropped).
 */
import type { ServerFrame } from "./live-frames.js";
import type { MessagePlayer, PlayerCallbacks } from "./message-player.js";
import type { AgentMessage, VoiceState } from "./voice-state.js";

export interface PlaybackQueue {
  /** Carries out `frame`'s effect on playback; `state` is the voice state after it. */
  apply(frame: ServerFrame, state: VoiceState): void;
  /** Stops whatever plays (leaving voice mode, a closed socket). */
  stop(): void;
}

/** A queue whose players come from `createPlayer`. */
export function createPlaybackQueue(createPlayer: (messageId: string, callbacks: PlayerCallbacks) => MessagePlayer, onPlayed: (messageId: string, playedChars: number) => void): PlaybackQueue {
  let current: { messageId: string; player: MessagePlayer } | null = null;
  const waiting: string[] = [];
  let latest: VoiceState | null = null;
  let isStopped = false;

  const find = (messageId: string): AgentMessage | undefined =>
    latest?.entries.find((entry): entry is AgentMessage => entry.kind === "agent" && entry.messageId === messageId);

  function startNext(): void {
    while (!current && !isStopped && waiting.length > 0) {
      const messageId = waiting.shift()!;
      const message = find(messageId);
      if (!message || message.interruption) continue;
      const player = createPlayer(messageId, {
        onProgress: (playedChars) => {
          if (current?.messageId === messageId) onPlayed(messageId, playedChars);
        },
        onFinished: () => {
          if (current?.messageId !== messageId) return;
          current = null;
          startNext();
        },
      });
      current = { messageId, player };
      if (latest?.isOutputPaused) player.pause();
      player.update(message.text, message.isComplete);
    }
  }

  return {
    apply(frame, state) {
      latest = state;
      if (isStopped) return;
      switch (frame.type) {
        case "turn.started":
          waiting.push(frame.message_id);
          startNext();
          return;
        case "output.delta":
        case "output.done": {
          const message = find(frame.message_id);
          if (current?.messageId === frame.message_id && message) current.player.update(message.text, message.isComplete);
          return;
        }
        case "output.paused":
          current?.player.pause();
          return;
        case "output.resumed":
          current?.player.resume();
          return;
        case "turn.interrupted":
          if (current?.messageId === frame.message_id) {
            current.player.stop();
            current = null;
            startNext();
          } else {
            const index = waiting.indexOf(frame.message_id);
            if (index >= 0) waiting.splice(index, 1);
          }
          return;
        default:
          return;
      }
    },
    stop() {
      isStopped = true;
      current?.player.stop();
      current = null;
      waiting.length = 0;
    },
  };
}
