/**
 * How speech interrupts a turn (DESIGN §12). The defaults are LiveKit Agents': 500 ms of speech,
 * no minimum of words, a false interruption after 2 s without a real turn, then resume.
 */
export interface InterruptionOptions {
  /** Speech shorter than this interrupts nothing; past it, the output pauses. */
  minInterruptionMs: number;
  /** A transcript with fewer words does not confirm an interruption (0: any transcript does). */
  minInterruptionWords: number;
  /** After paused speech that made no turn, how long until the interruption is declared false. */
  falseInterruptionTimeoutMs: number;
  /** Whether a false interruption resumes the paused output (else the turn is cut there). */
  resumeFalseInterruption: boolean;
  /** Whether user speech may interrupt the turn at all (an emergency stop always does). */
  interruptible: boolean;
}

export const DEFAULT_INTERRUPTION: Readonly<InterruptionOptions> = Object.freeze({
  minInterruptionMs: 500,
  minInterruptionWords: 0,
  falseInterruptionTimeoutMs: 2_000,
  resumeFalseInterruption: true,
  interruptible: true,
});

/** The words of a transcript, as `minInterruptionWords` counts them. */
export function countWords(transcript: string): number {
  const trimmed = transcript.trim();
  return trimmed === "" ? 0 : trimmed.split(/\s+/u).length;
}
