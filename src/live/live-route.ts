import type { LiveOutput } from "../runtime/live-output.js";
import { DEFAULT_INTERRUPTION, type InterruptionOptions } from "./interruption-options.js";
import type { LiveEvent, LiveEventClass } from "./live-events.js";

/** A piece of a turn's answer: text of the turn's one answer, or of a named message. */
export type LiveChunk = string | { messageId: string; text: string };

/** What a turn's `generate` gets besides its event. */
export interface LiveTurn {
  readonly turnId: string;
  /** Aborts when the turn is interrupted (its reason a {@link LiveInterruption}): stop, clean up in `finally`. */
  readonly signal: AbortSignal;
  /** The turn's playback, for a Tidemark run to publish only what was heard (`Runtime.attachLiveOutput`). */
  readonly output: LiveOutput;
  /**
   * The turn's work was stopped from elsewhere (an HTTP Stop, a TERMINATE): the client is told at
   * once to stop playing, at `heard` (what the stop kept as heard).
   */
  stopped(heard?: { messageId: string; content: string }): void;
}

/** Produces a turn's answer; it must end soon after `turn.signal` aborts. */
export type Generate<E extends LiveEvent> = (event: E, turn: LiveTurn) => AsyncIterable<LiveChunk>;

/** How events of some classes interrupt a turn. */
export interface InterruptRule {
  events: readonly LiveEventClass[];
  /** Runs after the interrupted generation has stopped (its `finally` done), with the event. */
  handler?: (event: LiveEvent) => void | Promise<void>;
  /** Only an event for which this holds interrupts (and, for speech, pauses). */
  condition?: (event: LiveEvent) => boolean;
}

/** A route once broadcast: what starts a turn, what interrupts it, and how it generates. */
export interface LiveRoute {
  readonly on: LiveEventClass;
  readonly rules: readonly InterruptRule[];
  readonly generate: Generate<LiveEvent>;
  /** Speech interruption options; `LiveBridge.configure` changes them. */
  options: InterruptionOptions;
}

/**
 * `bridge.on(Event).interruptOn(events, { handler, condition }).stream(generate).broadcast()`:
 * each call adds one part; `broadcast()` puts the route in service.
 */
export class RouteBuilder<E extends LiveEvent> {
  readonly #on: LiveEventClass<E>;
  readonly #rules: InterruptRule[] = [];
  readonly #register: (route: LiveRoute) => void;
  #generate: Generate<E> | undefined;
  #options: InterruptionOptions = { ...DEFAULT_INTERRUPTION };

  constructor(on: LiveEventClass<E>, register: (route: LiveRoute) => void) {
    this.#on = on;
    this.#register = register;
  }

  /** Events of these classes interrupt the route's turn (several calls add several rules). */
  interruptOn(
    events: LiveEventClass | readonly LiveEventClass[],
    options: Omit<InterruptRule, "events"> & Partial<InterruptionOptions> = {},
  ): this {
    const { handler, condition, ...interruption } = options;
    this.#rules.push({ events: Array.isArray(events) ? events : [events as LiveEventClass], handler, condition });
    this.#options = { ...this.#options, ...definedOnly(interruption) };
    return this;
  }

  /** How the route's turns generate their answer. */
  stream(generate: Generate<E>): this {
    this.#generate = generate;
    return this;
  }

  /** Puts the route in service: its turns' output goes to every sink of the bridge. */
  broadcast(): LiveRoute {
    if (!this.#generate) throw new TypeError("A live route needs stream(generate) before broadcast().");
    const route: LiveRoute = { on: this.#on, rules: this.#rules, generate: this.#generate as Generate<LiveEvent>, options: this.#options };
    this.#register(route);
    return route;
  }
}

function definedOnly(options: Partial<InterruptionOptions>): Partial<InterruptionOptions> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}
