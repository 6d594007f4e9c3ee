import { createId, systemTimers, type TimerHandle, type Timers } from "../core/index.js";
import type { LiveOutput } from "../runtime/live-output.js";
import { countWords, DEFAULT_INTERRUPTION, type InterruptionOptions } from "./interruption-options.js";
import { EmergencyStop, isOneOf, UserStartedSpeaking, UserStoppedSpeaking, type LiveEvent, type LiveEventClass } from "./live-events.js";
import { LiveInterruption, type InterruptReason } from "./live-interruption.js";
import { RouteBuilder, type InterruptRule, type LiveRoute } from "./live-route.js";
import { Playback } from "./playback.js";

/** Where a bridge's output goes (`broadcast()`): every subscribed sink gets every frame. */
export interface LiveSink {
  turnStarted(turn: { turnId: string; messageId: string; interruptible: boolean }): void;
  delta(messageId: string, text: string): void;
  /** Every character of the message was sent. */
  done(messageId: string): void;
  paused(): void;
  resumed(): void;
  /** Stop playing at once: the turn was cut; `heardChars` of `messageId` are what counts as heard. */
  interrupted(turn: { turnId: string; messageId: string | null; heardChars: number; reason: InterruptReason }): void;
}

export interface LiveBridgeOptions {
  /** Fake time in tests; the process's timers by default. */
  timers?: Timers;
  /** Whether the client acknowledges playback (default true); without, what was sent counts as heard. */
  playbackAcks?: boolean;
  /** Where a failing generate or handler is reported (the bridge goes on with the next turn). */
  onError?: (error: unknown) => void;
}

/** An output frame held while the output is paused. */
type Held = { kind: "started"; messageId: string } | { kind: "delta"; messageId: string; text: string } | { kind: "done"; messageId: string };

/** A turn in progress. */
interface Turn {
  readonly turnId: string;
  readonly route: LiveRoute;
  readonly controller: AbortController;
  readonly interruptible: boolean;
  /** The message being sent, once the first text came. */
  messageId: string | undefined;
  readonly doneQueued: Set<string>;
  /** How long each message is, once its run wants to publish it (a `done` follows its last character). */
  readonly expectedLength: Map<string, number>;
  held: Held[];
  isPaused: boolean;
  interruption: { reason: InterruptReason; rule: InterruptRule | undefined; event: LiveEvent | undefined } | undefined;
  /** What was heard when the turn was cut, fixed then: later acks change nothing. */
  heardAtCut: { messageId: string; content: string } | undefined;
  /** Resolves once the output is not paused (or the turn was cut). */
  unpaused: (() => void) | undefined;
}

/**
 * A live agent's event router (DESIGN §12): routes start turns on events, speech and other events
 * interrupt them, and only what the user heard counts. One turn at a time; the next waits until
 * the one before has stopped and its interrupt handler ran.
 */
export class LiveBridge {
  readonly #routes: LiveRoute[] = [];
  readonly #sinks = new Set<LiveSink>();
  readonly #timers: Timers;
  readonly #onError: (error: unknown) => void;
  readonly #playback: Playback;
  readonly #pending: { route: LiveRoute; event: LiveEvent }[] = [];
  readonly #idleWaiters: (() => void)[] = [];
  #active: Turn | undefined;
  #isLooping = false;
  #turnCount = 0;
  #isClosed = false;
  /** Between `UserStartedSpeaking` and `UserStoppedSpeaking`: a transcript then has a duration to judge. */
  #isSpeaking = false;
  #pauseTimer: TimerHandle | undefined;
  #falseInterruptionTimer: TimerHandle | undefined;

  constructor(options: LiveBridgeOptions = {}) {
    this.#timers = options.timers ?? systemTimers;
    this.#onError = options.onError ?? (() => {});
    this.#playback = new Playback(options.playbackAcks ?? true);
  }

  /** Starts a route on events of `eventClass`. */
  on<E extends LiveEvent>(eventClass: LiveEventClass<E>): RouteBuilder<E> {
    return new RouteBuilder(eventClass, (route) => this.#routes.push(route));
  }

  /** Adds a sink for the output; returns the function that removes it. */
  subscribe(sink: LiveSink): () => void {
    this.#sinks.add(sink);
    return () => this.#sinks.delete(sink);
  }

  /** The first route's interruption options (the one a session configures). */
  get interruption(): InterruptionOptions {
    return { ...(this.#routes[0]?.options ?? DEFAULT_INTERRUPTION) };
  }

  /** Whether the client acknowledges playback (else what was sent counts as heard). */
  get playbackAcks(): boolean {
    return this.#playback.hasAcks;
  }

  /** Changes every route's interruption options, and whether playback is acknowledged. */
  configure(change: { interruption?: Partial<InterruptionOptions>; playbackAcks?: boolean }): void {
    for (const route of this.#routes) route.options = { ...route.options, ...change.interruption };
    if (change.playbackAcks !== undefined) this.#playback.hasAcks = change.playbackAcks;
  }

  /** The client played `playedChars` of `messageId`; false for a message never sent. */
  ack(messageId: string, playedChars: number): boolean {
    if (!this.#playback.knows(messageId)) return false;
    this.#playback.ack(messageId, playedChars);
    return true;
  }

  /** Delivers an event: it may pause, interrupt or resume the turn, and start (or queue) one. */
  emit(event: LiveEvent): void {
    if (this.#isClosed) return;
    if (event instanceof UserStartedSpeaking) this.#speechStarted(event);
    else if (event instanceof UserStoppedSpeaking) this.#speechStopped(event);
    else if (event instanceof EmergencyStop) {
      // Stop talking now: the queue too, whatever the options.
      this.#pending.length = 0;
      const turn = this.#active;
      if (turn) this.#cut(turn, "emergency_stop", this.#ruleFor(turn, event), event);
    } else {
      const turn = this.#active;
      const rule = turn && this.#ruleFor(turn, event);
      if (turn && rule && turn.interruptible && (rule.condition?.(event) ?? true)) this.#cut(turn, reasonOf(event), rule, event);
    }
    if (!(event instanceof UserStartedSpeaking) && !(event instanceof UserStoppedSpeaking && event.transcript.trim() === "")) this.#route(event);
  }

  /** Resolves once no turn is running or waiting. */
  idle(): Promise<void> {
    if (!this.#isLooping) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Cuts the turn in progress (`reason`), drops the waiting ones, and waits until all stopped. */
  async close(reason: InterruptReason = "disconnected"): Promise<void> {
    this.#isClosed = true;
    this.#pending.length = 0;
    this.#clearSpeechTimers();
    if (this.#active) this.#cut(this.#active, reason, undefined, undefined);
    await this.idle();
  }

  // ── Speech ───────────────────────────────────────────────────────────────────────────────────

  #speechStarted(event: UserStartedSpeaking): void {
    this.#isSpeaking = true;
    this.#timers.clear(this.#falseInterruptionTimer);
    this.#falseInterruptionTimer = undefined;
    const turn = this.#active;
    if (!turn || turn.interruption || turn.isPaused || !turn.interruptible) return;
    const rule = this.#ruleFor(turn, event);
    if (!rule || !(rule.condition?.(event) ?? true)) return;
    // Speech shorter than the minimum is a cough or an "mm-hm": only past it does the output pause.
    const minMs = turn.route.options.minInterruptionMs;
    if (minMs <= 0) this.#pause(turn);
    else this.#pauseTimer = this.#timers.setTimeout(() => this.#pause(turn), minMs);
  }

  #speechStopped(event: UserStoppedSpeaking): void {
    this.#timers.clear(this.#pauseTimer);
    this.#pauseTimer = undefined;
    const wasSpeaking = this.#isSpeaking;
    this.#isSpeaking = false;
    const turn = this.#active;
    if (!turn || turn.interruption) return;
    const options = turn.route.options;
    const isRealTurn = event.transcript.trim() !== "" && countWords(event.transcript) >= options.minInterruptionWords;
    if (!turn.isPaused) {
      // A transcript with no speech before it (typed, or from a recogniser without voice activity
      // detection) has no duration that could make it a cough: a real turn in it is deliberate, and
      // cuts like speech that lasted. Speech shorter than the minimum waits for the turn's end.
      if (!wasSpeaking && isRealTurn && turn.interruptible) {
        const rule = this.#ruleFor(turn, new UserStartedSpeaking());
        if (rule && (rule.condition?.(event) ?? true)) this.#cut(turn, "user_speech", rule, event);
      }
      return;
    }
    if (isRealTurn) {
      this.#cut(turn, "user_speech", this.#ruleFor(turn, new UserStartedSpeaking()), event);
      return;
    }
    // A false interruption: no real turn came of the speech. Resume (or cut) once it is sure.
    this.#timers.clear(this.#falseInterruptionTimer);
    this.#falseInterruptionTimer = this.#timers.setTimeout(() => {
      this.#falseInterruptionTimer = undefined;
      if (this.#active !== turn || turn.interruption) return;
      if (options.resumeFalseInterruption) this.#resume(turn);
      else this.#cut(turn, "false_interruption", undefined, undefined);
    }, options.falseInterruptionTimeoutMs);
  }

  #clearSpeechTimers(): void {
    this.#timers.clear(this.#pauseTimer);
    this.#timers.clear(this.#falseInterruptionTimer);
    this.#pauseTimer = this.#falseInterruptionTimer = undefined;
  }

  #pause(turn: Turn): void {
    this.#pauseTimer = undefined;
    if (this.#active !== turn || turn.interruption || turn.isPaused) return;
    turn.isPaused = true;
    for (const sink of this.#sinks) sink.paused();
  }

  #resume(turn: Turn): void {
    if (!turn.isPaused) return;
    turn.isPaused = false;
    for (const sink of this.#sinks) sink.resumed();
    for (const held of turn.held.splice(0)) this.#send(turn, held);
    turn.unpaused?.();
  }

  // ── Turns ────────────────────────────────────────────────────────────────────────────────────

  #ruleFor(turn: Turn, event: LiveEvent): InterruptRule | undefined {
    return turn.route.rules.find((rule) => isOneOf(event, rule.events));
  }

  /** Queues a turn of every route that starts on this event. */
  #route(event: LiveEvent): void {
    for (const route of this.#routes) {
      if (event instanceof route.on) this.#pending.push({ route, event });
    }
    if (this.#pending.length > 0 && !this.#isLooping) void this.#loop();
  }

  async #loop(): Promise<void> {
    this.#isLooping = true;
    try {
      for (let next = this.#pending.shift(); next && !this.#isClosed; next = this.#pending.shift()) {
        const turn = this.#newTurn(next.route);
        this.#active = turn;
        await this.#play(turn, next.event);
        this.#active = undefined;
        this.#clearSpeechTimers();
        const { rule, event } = turn.interruption ?? {};
        // The handler runs once the cut generation has really stopped (its `finally` ran).
        if (rule?.handler && event) await Promise.resolve(rule.handler(event)).catch(this.#onError);
      }
    } finally {
      this.#isLooping = false;
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }

  #newTurn(route: LiveRoute): Turn {
    return {
      turnId: `turn-${++this.#turnCount}`,
      route,
      controller: new AbortController(),
      interruptible: route.options.interruptible,
      messageId: undefined,
      doneQueued: new Set(),
      expectedLength: new Map(),
      held: [],
      isPaused: false,
      interruption: undefined,
      heardAtCut: undefined,
      unpaused: undefined,
    };
  }

  /** Runs one turn's generate to its end, sending (or holding) its output. */
  async #play(turn: Turn, event: LiveEvent): Promise<void> {
    const defaultMessageId = createId("msg");
    const output: LiveOutput = {
      heardWhole: (messageId, content, signal) => {
        turn.expectedLength.set(messageId, content.length);
        this.#queueDoneIfSent(turn, messageId);
        return this.#playback.untilHeard(messageId, content.length, signal);
      },
      heard: () => turn.heardAtCut ?? this.#heardOf(turn),
    };
    try {
      const stopped = (heard?: { messageId: string; content: string }): void => {
        if (turn.interruption) return;
        turn.heardAtCut = heard ?? { messageId: turn.messageId ?? "", content: "" };
        this.#announceCut(turn, "stopped");
      };
      for await (const chunk of turn.route.generate(event, { turnId: turn.turnId, signal: turn.controller.signal, output, stopped })) {
        if (turn.interruption) break;
        const { messageId, text } = typeof chunk === "string" ? { messageId: defaultMessageId, text: chunk } : chunk;
        this.#deliver(turn, messageId, text);
      }
      if (!turn.interruption && turn.messageId) this.#queue(turn, { kind: "done", messageId: turn.messageId });
      // Held output still goes out once the user stops (or the turn is cut).
      if (turn.isPaused && !turn.interruption) await new Promise<void>((resolve) => (turn.unpaused = resolve));
    } catch (error) {
      if (!turn.controller.signal.aborted) this.#onError(error);
    }
  }

  #deliver(turn: Turn, messageId: string, text: string): void {
    if (messageId !== turn.messageId) {
      if (turn.messageId) this.#queue(turn, { kind: "done", messageId: turn.messageId });
      turn.messageId = messageId;
      this.#queue(turn, { kind: "started", messageId });
    }
    if (text) this.#queue(turn, { kind: "delta", messageId, text });
  }

  #queue(turn: Turn, item: Held): void {
    if (item.kind === "done") {
      if (turn.doneQueued.has(item.messageId)) return;
      turn.doneQueued.add(item.messageId);
    }
    if (turn.isPaused) turn.held.push(item);
    else this.#send(turn, item);
  }

  #send(turn: Turn, item: Held): void {
    switch (item.kind) {
      case "started":
        for (const sink of this.#sinks) sink.turnStarted({ turnId: turn.turnId, messageId: item.messageId, interruptible: turn.interruptible });
        return;
      case "delta":
        this.#playback.sent(item.messageId, item.text);
        for (const sink of this.#sinks) sink.delta(item.messageId, item.text);
        this.#queueDoneIfSent(turn, item.messageId);
        return;
      case "done":
        for (const sink of this.#sinks) sink.done(item.messageId);
    }
  }

  /** A message whose run wants to publish it gets its `done` once all its characters went out. */
  #queueDoneIfSent(turn: Turn, messageId: string): void {
    const length = turn.expectedLength.get(messageId);
    // While paused, the `done` waits with the held output and follows it on resume.
    if (length !== undefined && this.#playback.sentChars(messageId) >= length) this.#queue(turn, { kind: "done", messageId });
  }

  #heardOf(turn: Turn): { messageId: string; content: string } | undefined {
    const heard = this.#playback.heard();
    return heard && heard.messageId === turn.messageId ? heard : undefined;
  }

  /** Cuts `turn`: no more output, playback stops at what was heard, the generation is aborted. */
  #cut(turn: Turn, reason: InterruptReason, rule: InterruptRule | undefined, event: LiveEvent | undefined): void {
    if (turn.interruption) return;
    turn.interruption = { reason, rule, event };
    this.#clearSpeechTimers();
    this.#announceCut(turn, reason);
    turn.controller.abort(new LiveInterruption(reason, turn.heardAtCut?.content.length ?? 0));
    turn.unpaused?.();
  }

  #announceCut(turn: Turn, reason: InterruptReason): void {
    turn.heardAtCut ??= this.#heardOf(turn);
    turn.held = [];
    turn.isPaused = false;
    turn.interruption ??= { reason, rule: undefined, event: undefined };
    const heardChars = turn.heardAtCut?.content.length ?? 0;
    for (const sink of this.#sinks) sink.interrupted({ turnId: turn.turnId, messageId: turn.messageId ?? null, heardChars, reason });
  }
}

/** `AgentHandoff` → `agent_handoff`: the reason an event of a user-defined class gives. */
function reasonOf(event: LiveEvent): InterruptReason {
  return event.constructor.name.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
}
