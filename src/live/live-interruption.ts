/** Why a turn was cut. User-defined events give their class name in snake case. */
export type InterruptReason = "user_speech" | "emergency_stop" | "false_interruption" | "stopped" | "disconnected" | (string & {});

/** The abort reason of an interrupted turn's signal (the TypeScript form of a `CancelledError`). */
export class LiveInterruption extends Error {
  override readonly name = "LiveInterruption";

  constructor(
    readonly reason: InterruptReason,
    /** The characters of the answer the user heard before the cut. */
    readonly heardChars: number,
  ) {
    super(`The turn was interrupted (${reason}).`);
  }
}
