/**
 * The voice mode's state (web/src/voice/voice-state.ts) and its playback queue
 * (web/src/voice/playback-queue.ts): frames and played characters in, the timeline out; a barge-in
 * stops playback at once and shows the heard prefix apart from the discarded rest.
 */
import { describe, expect, it } from "vitest";
import type { ServerFrame } from "../web/src/voice/live-frames.js";
import type { MessagePlayer, PlayerCallbacks } from "../web/src/voice/message-player.js";
import { createPlaybackQueue } from "../web/src/voice/playback-queue.js";
import { agentMessagePhase, agentMessageText, INITIAL_VOICE_STATE, voiceReducer, type AgentMessage, type VoiceAction, type VoiceState } from "../web/src/voice/voice-state.js";

const OPTIONS = { min_interruption_ms: 500, min_interruption_words: 0, false_interruption_timeout_ms: 2000, resume_false_interruption: true, interruptible: true };
const frame = (value: ServerFrame): VoiceAction => ({ type: "frame", frame: value });
const run = (actions: VoiceAction[], from: VoiceState = INITIAL_VOICE_STATE): VoiceState => actions.reduce(voiceReducer, from);
const agent = (state: VoiceState, messageId = "msg_1"): AgentMessage =>
  state.entries.find((entry): entry is AgentMessage => entry.kind === "agent" && entry.messageId === messageId)!;

const started = [
  frame({ type: "session.ready", thread_id: "thr_1", interruption: OPTIONS, playback_acks: true }),
  { type: "said", transcript: "Why do tides turn?" } as VoiceAction,
  frame({ type: "turn.started", run_id: "run_1", message_id: "msg_1", interruptible: true }),
  frame({ type: "output.delta", message_id: "msg_1", text: "The tide turns " }),
  frame({ type: "output.delta", message_id: "msg_1", text: "because the moon pulls." }),
];

describe("the voice mode's state", () => {
  it("builds the timeline: what the user said, then the agent's message as it arrives", () => {
    const state = run(started);
    expect(state.connection).toBe("open");
    expect(state.threadId).toBe("thr_1");
    expect(state.interruption).toEqual(OPTIONS);
    expect(state.entries.map((entry) => entry.kind)).toEqual(["user", "agent"]);
    expect(agent(state)).toMatchObject({ runId: "run_1", text: "The tide turns because the moon pulls.", playedChars: 0, isComplete: false });
    expect(agentMessagePhase(agent(state))).toBe("playing");
    // While it plays, only what was played is shown.
    expect(agentMessageText(agent(state))).toEqual({ heard: "", discarded: "" });
    const played = run([{ type: "played", messageId: "msg_1", playedChars: 8 }], state);
    expect(agentMessageText(agent(played))).toEqual({ heard: "The tide", discarded: "" });
  });

  it("keeps acks monotonic and within what was received", () => {
    const state = run([...started, { type: "played", messageId: "msg_1", playedChars: 14 }, { type: "played", messageId: "msg_1", playedChars: 9 }]);
    expect(agent(state).playedChars).toBe(14);
    expect(agent(run([{ type: "played", messageId: "msg_1", playedChars: 900 }], state)).playedChars).toBe(38);
    // An ack for a message it does not know changes nothing.
    expect(run([{ type: "played", messageId: "msg_9", playedChars: 3 }], state)).toBe(state);
  });

  it("a message played to the end waits for publication, then shows as published whole", () => {
    const text = "The tide turns because the moon pulls.";
    let state = run([...started, frame({ type: "output.done", message_id: "msg_1" }), { type: "played", messageId: "msg_1", playedChars: text.length }]);
    expect(agentMessagePhase(agent(state))).toBe("played");
    state = run([frame({ type: "message.published", message_id: "msg_1", content: text, interrupted: false, state_version: 2 }), frame({ type: "turn.ended", run_id: "run_1", status: "completed" })], state);
    expect(agentMessagePhase(agent(state))).toBe("published");
    expect(agent(state)).toMatchObject({ published: { content: text, isInterrupted: false, stateVersion: 2 }, runStatus: "completed" });
    expect(agentMessageText(agent(state))).toEqual({ heard: text, discarded: "" });
  });

  it("pauses and resumes the output", () => {
    const paused = run([...started, frame({ type: "output.paused" })]);
    expect(paused.isOutputPaused).toBe(true);
    expect(run([frame({ type: "output.resumed" })], paused).isOutputPaused).toBe(false);
  });

  it("after a barge-in shows the heard prefix apart from the discarded rest, and drops later deltas", () => {
    let state = run([...started, { type: "played", messageId: "msg_1", playedChars: 14 }, frame({ type: "output.paused" })]);
    state = run(
      [
        frame({ type: "turn.interrupted", run_id: "run_1", message_id: "msg_1", heard_chars: 14, reason: "user_speech" }),
        frame({ type: "output.delta", message_id: "msg_1", text: " Late words." }),
        { type: "played", messageId: "msg_1", playedChars: 30 },
      ],
      state,
    );
    expect(state.isOutputPaused).toBe(false);
    expect(agentMessagePhase(agent(state))).toBe("interrupted");
    expect(agent(state).text).toBe("The tide turns because the moon pulls.");
    expect(agent(state).playedChars).toBe(14);
    expect(agentMessageText(agent(state))).toEqual({ heard: "The tide turns", discarded: " because the moon pulls." });
    // The published frame is what entered history: it is what the screen calls heard.
    state = run([frame({ type: "message.published", message_id: "msg_1", content: "The tide turns", interrupted: true, state_version: 2 })], state);
    expect(agentMessagePhase(agent(state))).toBe("interrupted");
    expect(agentMessageText(agent(state))).toEqual({ heard: "The tide turns", discarded: " because the moon pulls." });
    expect(agent(state).interruption).toEqual({ heardChars: 14, reason: "user_speech" });
  });

  it("keeps errors until dismissed, and says how the socket closed", () => {
    let state = run([...started, frame({ type: "error", error: "invalid_frame", message: "Unknown frame type." })]);
    expect(state.error).toEqual({ code: "invalid_frame", message: "Unknown frame type." });
    state = run([{ type: "dismiss_error" }, { type: "closed", code: 1006, reason: "", wasOpen: true }], state);
    expect(state.error).toBeNull();
    expect(state).toMatchObject({ connection: "closed", closed: { code: 1006, wasOpen: true } });
  });

  it("survives a JSON round trip (the state is plain data)", () => {
    const state = run([...started, { type: "played", messageId: "msg_1", playedChars: 14 }]);
    expect(JSON.parse(JSON.stringify(state))).toEqual(state);
  });
});

/** A player that records what it was told, and reports progress when the test says so. */
function fakePlayers() {
  const players: { messageId: string; callbacks: PlayerCallbacks; log: string[] }[] = [];
  const create = (messageId: string, callbacks: PlayerCallbacks): MessagePlayer => {
    const log: string[] = [];
    players.push({ messageId, callbacks, log });
    return {
      update: (text, isComplete) => log.push(`update:${text}${isComplete ? ":done" : ""}`),
      pause: () => log.push("pause"),
      resume: () => log.push("resume"),
      stop: () => log.push("stop"),
    };
  };
  return { players, create };
}

describe("the voice mode's playback queue", () => {
  /** Feeds frames to the reducer and the queue, as the voice session does. */
  function drive() {
    const { players, create } = fakePlayers();
    const played: [string, number][] = [];
    const queue = createPlaybackQueue(create, (messageId, chars) => played.push([messageId, chars]));
    let state = INITIAL_VOICE_STATE;
    const apply = (...frames: ServerFrame[]) => {
      for (const value of frames) {
        state = voiceReducer(state, { type: "frame", frame: value });
        queue.apply(value, state);
      }
    };
    return { players, played, queue, apply };
  }

  it("plays a message as it arrives, pauses and resumes it, and stops it at once on an interruption", () => {
    const { players, played, apply } = drive();
    apply({ type: "turn.started", run_id: "run_1", message_id: "msg_1", interruptible: true }, { type: "output.delta", message_id: "msg_1", text: "The tide" });
    expect(players).toHaveLength(1);
    players[0]!.callbacks.onProgress(3);
    apply({ type: "output.paused" }, { type: "output.resumed" }, { type: "output.paused" });
    apply({ type: "turn.interrupted", run_id: "run_1", message_id: "msg_1", heard_chars: 3, reason: "user_speech" });
    // A late progress report of the stopped player is not an ack.
    players[0]!.callbacks.onProgress(8);
    expect(players[0]!.log).toEqual(["update:", "update:The tide", "pause", "resume", "pause", "stop"]);
    expect(played).toEqual([["msg_1", 3]]);
  });

  it("plays messages one after another, and starts a paused one paused", () => {
    const { players, apply } = drive();
    apply(
      { type: "turn.started", run_id: "run_1", message_id: "msg_1", interruptible: true },
      { type: "output.delta", message_id: "msg_1", text: "One." },
      { type: "output.done", message_id: "msg_1" },
      { type: "turn.started", run_id: "run_2", message_id: "msg_2", interruptible: true },
      { type: "output.delta", message_id: "msg_2", text: "Two." },
    );
    expect(players.map((player) => player.messageId)).toEqual(["msg_1"]);
    apply({ type: "output.paused" });
    players[0]!.callbacks.onFinished();
    expect(players.map((player) => player.messageId)).toEqual(["msg_1", "msg_2"]);
    expect(players[1]!.log).toEqual(["pause", "update:Two."]);
  });

  it("never plays a waiting message that was interrupted, and plays nothing once stopped", () => {
    const { players, queue, apply } = drive();
    apply(
      { type: "turn.started", run_id: "run_1", message_id: "msg_1", interruptible: true },
      { type: "turn.started", run_id: "run_2", message_id: "msg_2", interruptible: true },
      { type: "turn.interrupted", run_id: "run_2", message_id: "msg_2", heard_chars: 0, reason: "emergency_stop" },
    );
    players[0]!.callbacks.onFinished();
    expect(players.map((player) => player.messageId)).toEqual(["msg_1"]);
    queue.stop();
    apply({ type: "turn.started", run_id: "run_3", message_id: "msg_3", interruptible: true });
    expect(players).toHaveLength(1);
  });
});
