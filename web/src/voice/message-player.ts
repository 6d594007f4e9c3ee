/**
 * How the voice mode plays one agent message: spoken by `speechSynthesis` or shown as text at a
 * reading pace. Either way the player reports how much of the message the user has now heard or
 * seen, which the voice mode acks to the server (`playback`).
 */

/** Told by a player as it plays. */
export interface PlayerCallbacks {
  /** `playedChars` characters of the message have been played (only grows). */
  onProgress(playedChars: number): void;
  /** All of the (complete) message was played. */
  onFinished(): void;
}

/** One message's player. */
export interface MessagePlayer {
  /** The text received so far and whether it is complete (`output.done`); called on every change. */
  update(text: string, isComplete: boolean): void;
  pause(): void;
  resume(): void;
  /** Stops at once (an interruption, leaving voice mode): nothing more is played or reported. */
  stop(): void;
}
