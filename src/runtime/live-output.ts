import type { HeardAnswer } from "../store/index.js";

/**
 * Where a live turn's answer is played to the user (DESIGN §12): a run that has one publishes an
 * assistant message only once the user heard all of it, and a cancel publishes what they heard.
 */
export interface LiveOutput {
  /**
   * Resolves once the user heard `content` (message `messageId`) to its end; rejects with
   * `signal`'s reason when it aborts first (an interruption, a Stop).
   */
  heardWhole(messageId: string, content: string, signal: AbortSignal): Promise<void>;
  /** What the user has heard so far of the answer being spoken, if anything. */
  heard(): HeardAnswer | undefined;
}
