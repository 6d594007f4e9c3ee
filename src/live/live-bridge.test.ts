import { describe, expect, it } from "vitest";
import { createFakeTime } from "../../test/support/fake-timers.js";
import { LiveBridge, type LiveSink } from "./live-bridge.js";
import { AgentHandoff, EmergencyStop, LiveEvent, UserStartedSpeaking, UserStoppedSpeaking } from "./live-events.js";
import { LiveInterruption } from "./live-interruption.js";
import type { LiveTurn } from "./live-route.js";

/** Text a test pushes to a turn's generate as it likes; the generate ends on `end()` or on the turn's abort. */
function createFeed() {
  const queue: (string | null)[] = [];
  let wake: (() => void) | undefined;
  return {
    push(text: string | null) {
      queue.push(text);
      wake?.();
    },
    async *read(signal: AbortSignal): AsyncGenerator<string> {
      const onAbort = () => wake?.();
      signal.addEventListener("abort", onAbort);
      try {
        for (;;) {
          while (queue.length === 0 && !signal.aborted) await new Promise<void>((resolve) => (wake = resolve));
          if (signal.aborted) return;
          const next = queue.shift()!;
          if (next === null) return;
          yield next;
        }
      } finally {
        signal.removeEventListener("abort", onAbort);
      }
    },
  };
}

/** Every frame the bridge sent, in order, as short strings; `next(kind)` waits for one. */
function recordingSink(): LiveSink & { frames: string[]; seen(frame: string): Promise<void> } {
  const frames: string[] = [];
  const waiters: { frame: string; resolve: () => void }[] = [];
  const push = (frame: string) => {
    frames.push(frame);
    for (const waiter of waiters.filter((entry) => entry.frame === frame)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
  };
  return {
    frames,
    seen: (frame) => (frames.includes(frame) ? Promise.resolve() : new Promise((resolve) => waiters.push({ frame, resolve }))),
    turnStarted: (turn) => push(`started${turn.interruptible ? "" : " (uninterruptible)"}`),
    delta: (_messageId, text) => push(`delta ${text}`),
    done: () => push("done"),
    paused: () => push("paused"),
    resumed: () => push("resumed"),
    interrupted: (turn) => push(`interrupted ${turn.reason} heard=${turn.heardChars}`),
  };
}

function setUp(options: { interruptible?: boolean; condition?: (event: LiveEvent) => boolean; resumeFalseInterruption?: boolean; minInterruptionWords?: number } = {}) {
  const time = createFakeTime();
  const bridge = new LiveBridge({ timers: time.timers });
  const sink = recordingSink();
  bridge.subscribe(sink);
  const feeds: ReturnType<typeof createFeed>[] = [];
  const log: string[] = [];
  const turns: LiveTurn[] = [];
  bridge
    .on(UserStoppedSpeaking)
    .interruptOn([UserStartedSpeaking, EmergencyStop, AgentHandoff], {
      handler: (event) => void log.push(`handler ${event.constructor.name}`),
      condition: options.condition,
      interruptible: options.interruptible,
      resumeFalseInterruption: options.resumeFalseInterruption,
      minInterruptionWords: options.minInterruptionWords,
    })
    .stream(async function* (event, turn) {
      turns.push(turn);
      const feed = createFeed();
      feeds.push(feed);
      log.push(`generate "${event.transcript}"`);
      try {
        yield* feed.read(turn.signal);
      } finally {
        log.push(`finally "${event.transcript}"`);
      }
    })
    .broadcast();
  const waitForTurn = async (count: number) => {
    while (feeds.length < count) await new Promise((resolve) => setImmediate(resolve));
    return feeds[count - 1]!;
  };
  return { time, bridge, sink, log, turns, waitForTurn };
}

describe("LiveBridge", () => {
  it("plays a turn for a transcript: started, deltas, done", async () => {
    const { bridge, sink, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("hello"));
    const feed = await waitForTurn(1);
    feed.push("Hi ");
    feed.push("there");
    feed.push(null);
    await bridge.idle();
    expect(sink.frames).toEqual(["started", "delta Hi ", "delta there", "done"]);
  });

  it("a silent transcript starts nothing", async () => {
    const { bridge, sink } = setUp();
    bridge.emit(new UserStoppedSpeaking("   "));
    await bridge.idle();
    expect(sink.frames).toEqual([]);
  });

  it("barge-in: speech past the minimum pauses, a transcript cuts at what was heard, the handler runs after the generate's finally, then the new turn", async () => {
    const { bridge, sink, log, time, turns, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("tell me"));
    const feed = await waitForTurn(1);
    feed.push("Once upon ");
    await sink.seen("delta Once upon ");
    expect(turns[0]!.output.heard()).toMatchObject({ content: "" });
    bridge.ack(currentMessage(turns[0]!), 4);
    bridge.emit(new UserStartedSpeaking());
    expect(sink.frames).not.toContain("paused");
    await time.advance(500);
    expect(sink.frames.at(-1)).toBe("paused");
    feed.push("a time");
    bridge.emit(new UserStoppedSpeaking("wait"));
    await waitForTurn(2);
    expect(sink.frames.slice(0, 4)).toEqual(["started", "delta Once upon ", "paused", "interrupted user_speech heard=4"]);
    expect(sink.frames).not.toContain("delta a time");
    expect((turns[0]!.signal.reason as LiveInterruption).reason).toBe("user_speech");
    expect(turns[0]!.output.heard()).toMatchObject({ content: "Once" });
    expect(log).toEqual(['generate "tell me"', 'finally "tell me"', "handler UserStoppedSpeaking", 'generate "wait"']);
  });

  it("a cough (speech shorter than the minimum) interrupts nothing; its transcript waits for the turn to end", async () => {
    const { bridge, sink, time, log, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    feed.push("Sure.");
    await sink.seen("delta Sure.");
    bridge.emit(new UserStartedSpeaking());
    await time.advance(150);
    bridge.emit(new UserStoppedSpeaking("mm-hm"));
    await time.advance(5_000);
    expect(sink.frames).toEqual(["started", "delta Sure."]);
    feed.push(null);
    await waitForTurn(2);
    expect(log).toEqual(['generate "go"', 'finally "go"', 'generate "mm-hm"']);
  });

  it("a transcript without speech before it (typed) cuts the turn at what was heard, and is the next turn", async () => {
    const { bridge, sink, log, turns, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    feed.push("Sure, here.");
    await sink.seen("delta Sure, here.");
    bridge.ack(currentMessage(turns[0]!), 5);
    bridge.emit(new UserStoppedSpeaking("stop, tell me another"));
    await waitForTurn(2);
    expect(sink.frames).toEqual(["started", "delta Sure, here.", "interrupted user_speech heard=5"]);
    expect(log).toEqual(['generate "go"', 'finally "go"', "handler UserStoppedSpeaking", 'generate "stop, tell me another"']);
  });

  it("a typed transcript cuts nothing when it has fewer words than the minimum, when the turn is uninterruptible, or when the condition fails", async () => {
    for (const options of [{ minInterruptionWords: 3 }, { interruptible: false }, { condition: () => false }]) {
      const { bridge, sink, log, time, waitForTurn } = setUp(options);
      bridge.emit(new UserStoppedSpeaking("go"));
      const feed = await waitForTurn(1);
      feed.push("Sure.");
      await sink.seen("delta Sure.");
      bridge.emit(new UserStoppedSpeaking("wait, no"));
      await time.advance(5_000);
      expect(sink.frames.filter((frame) => frame.startsWith("interrupted") || frame === "paused")).toEqual([]);
      feed.push(null);
      await waitForTurn(2);
      expect(log).toEqual(['generate "go"', 'finally "go"', 'generate "wait, no"']);
    }
  });

  it("typed text after a false interruption's speech confirms the interruption", async () => {
    const { bridge, sink, log, time, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    feed.push("One. ");
    await sink.seen("delta One. ");
    bridge.emit(new UserStartedSpeaking());
    await time.advance(600);
    bridge.emit(new UserStoppedSpeaking(""));
    await time.advance(1_000);
    bridge.emit(new UserStoppedSpeaking("the other one"));
    await waitForTurn(2);
    expect(sink.frames).toEqual(["started", "delta One. ", "paused", "interrupted user_speech heard=0"]);
    expect(log.at(-1)).toBe('generate "the other one"');
  });

  it("a false interruption resumes the paused output, sending what was held", async () => {
    const { bridge, sink, time, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    feed.push("One. ");
    await sink.seen("delta One. ");
    bridge.emit(new UserStartedSpeaking());
    await time.advance(600);
    feed.push("Two. ");
    bridge.emit(new UserStoppedSpeaking(""));
    await time.advance(1_999);
    expect(sink.frames).toEqual(["started", "delta One. ", "paused"]);
    await time.advance(1);
    expect(sink.frames).toEqual(["started", "delta One. ", "paused", "resumed", "delta Two. "]);
    feed.push(null);
    await bridge.idle();
    expect(sink.frames.at(-1)).toBe("done");
  });

  it("with resume off, a false interruption cuts the turn", async () => {
    const { bridge, sink, time, waitForTurn } = setUp({ resumeFalseInterruption: false });
    bridge.emit(new UserStoppedSpeaking("go"));
    await waitForTurn(1);
    bridge.emit(new UserStartedSpeaking());
    await time.advance(500);
    bridge.emit(new UserStoppedSpeaking(""));
    await time.advance(2_000);
    await bridge.idle();
    expect(sink.frames).toEqual(["paused", "interrupted false_interruption heard=0"]);
  });

  it("a transcript with fewer words than the minimum is a false interruption, and the next turn", async () => {
    const { bridge, sink, time, log, waitForTurn } = setUp({ minInterruptionWords: 3 });
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    bridge.emit(new UserStartedSpeaking());
    await time.advance(500);
    bridge.emit(new UserStoppedSpeaking("okay"));
    await time.advance(2_000);
    expect(sink.frames).toEqual(["paused", "resumed"]);
    feed.push(null);
    await waitForTurn(2);
    expect(log.at(-1)).toBe('generate "okay"');
  });

  it("an uninterruptible turn survives speech, not an emergency stop (which also drops the queue)", async () => {
    const { bridge, sink, time, log, waitForTurn } = setUp({ interruptible: false });
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    feed.push("Important. ");
    await sink.seen("delta Important. ");
    bridge.emit(new UserStartedSpeaking());
    await time.advance(10_000);
    bridge.emit(new UserStoppedSpeaking("stop talking"));
    bridge.emit(new AgentHandoff("billing"));
    expect(sink.frames).toEqual(["started (uninterruptible)", "delta Important. "]);
    bridge.emit(new EmergencyStop());
    await bridge.idle();
    expect(sink.frames.at(-1)).toBe("interrupted emergency_stop heard=0");
    expect(log).toEqual(['generate "go"', 'finally "go"', "handler EmergencyStop"]);
  });

  it("an event whose condition fails interrupts nothing; another event class cuts by its name", async () => {
    let allow = false;
    const { bridge, sink, time, waitForTurn } = setUp({ condition: () => allow });
    bridge.emit(new UserStoppedSpeaking("go"));
    await waitForTurn(1);
    bridge.emit(new UserStartedSpeaking());
    await time.advance(1_000);
    bridge.emit(new AgentHandoff("billing"));
    expect(sink.frames).toEqual([]);
    allow = true;
    bridge.emit(new AgentHandoff("billing"));
    await bridge.idle();
    expect(sink.frames).toEqual(["interrupted agent_handoff heard=0"]);
  });

  it("a run's answer is heard whole once acked to its end (an ack past the end is clamped); done follows its last character", async () => {
    const { bridge, sink, turns, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    feed.push("Hello");
    await sink.seen("delta Hello");
    const turn = turns[0]!;
    const messageId = currentMessage(turn);
    let isHeard = false;
    const heard = turn.output.heardWhole(messageId, "Hello world", turn.signal).then(() => (isHeard = true));
    expect(sink.frames).not.toContain("done");
    feed.push(" world");
    await sink.seen("done");
    bridge.ack(messageId, 5);
    await new Promise((resolve) => setImmediate(resolve));
    expect(isHeard).toBe(false);
    bridge.ack(messageId, 10_000);
    await heard;
    expect(turn.output.heard()).toEqual({ messageId, content: "Hello world" });
    expect(bridge.ack("msg_never_sent", 1)).toBe(false);
    feed.push(null);
    await bridge.idle();
    expect(sink.frames.filter((frame) => frame === "done")).toHaveLength(1);
  });

  it("close cuts the turn as disconnected and waits for it to stop", async () => {
    const { bridge, sink, log, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("go"));
    await waitForTurn(1);
    await bridge.close();
    expect(sink.frames).toEqual(["interrupted disconnected heard=0"]);
    expect(log).toEqual(['generate "go"', 'finally "go"']);
  });

  it("a turn stopped from elsewhere tells the sinks at once, at what the stop kept as heard", async () => {
    const { bridge, sink, turns, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    feed.push("Hello world");
    await sink.seen("delta Hello world");
    const turn = turns[0]!;
    turn.stopped({ messageId: currentMessage(turn), content: "Hel" });
    expect(sink.frames.at(-1)).toBe("interrupted stopped heard=3");
    feed.push("more");
    feed.push(null);
    await bridge.idle();
    expect(sink.frames).not.toContain("delta more");
  });

  it("a run that wants to publish while the output is paused gets its done after the resume", async () => {
    const { bridge, sink, time, turns, waitForTurn } = setUp();
    bridge.emit(new UserStoppedSpeaking("go"));
    const feed = await waitForTurn(1);
    feed.push("All of it");
    await sink.seen("delta All of it");
    bridge.emit(new UserStartedSpeaking());
    await time.advance(500);
    const turn = turns[0]!;
    const messageId = currentMessage(turn);
    const heard = turn.output.heardWhole(messageId, "All of it", turn.signal);
    expect(sink.frames).not.toContain("done");
    bridge.emit(new UserStoppedSpeaking(""));
    await time.advance(2_000);
    expect(sink.frames.slice(-2)).toEqual(["resumed", "done"]);
    bridge.ack(messageId, 9);
    await heard;
    feed.push(null);
    await bridge.idle();
  });
});

/** The message a turn is sending (what heard() names, with nothing heard yet). */
function currentMessage(turn: LiveTurn): string {
  return turn.output.heard()!.messageId;
}
