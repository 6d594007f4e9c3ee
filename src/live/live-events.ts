/**
 * The events a live agent's routes react to (DESIGN §12), as classes: a route names them by class
 * and an event matches by `instanceof`, so a user-defined event is a subclass of {@link LiveEvent}.
 */
export abstract class LiveEvent {}

/** The user began to speak (from the client's voice activity detection). */
export class UserStartedSpeaking extends LiveEvent {}

/** The user stopped speaking; a non-empty transcript is a user turn. */
export class UserStoppedSpeaking extends LiveEvent {
  constructor(readonly transcript = "") {
    super();
  }
}

/** Stop talking now: cuts any turn, an uninterruptible one too. */
export class EmergencyStop extends LiveEvent {}

/** The conversation moves to another agent. */
export class AgentHandoff extends LiveEvent {
  constructor(readonly to = "") {
    super();
  }
}

/** A class of events, as routes name them. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any constructor arguments
export type LiveEventClass<E extends LiveEvent = LiveEvent> = abstract new (...args: any[]) => E;

/** Whether `event` is of one of `classes`. */
export function isOneOf(event: LiveEvent, classes: readonly LiveEventClass[]): boolean {
  return classes.some((eventClass) => event instanceof eventClass);
}
