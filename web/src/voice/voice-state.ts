/**
 * What the voice mode shows, as one pure reducer over the live socket's frames and the local
 * playback progress: the timeline of user utterances and agent messages, each agent message with
 * the text received, how much of it was played (acked), and how it ended (heard to the end and
 * published, or interrupted: the heard prefix published, the rest discarded).
 */
import type { InterruptionOptions, InterruptionReason, ServerFrame } from "./live-frames.js";
import { nextAck, splitHeard } from "./playback-acks.js";

/** One agent turn's message as the voice mode knows it. */
export interface AgentMessage {
  kind: "agent";
  messageId: string;
  runId: string;
  isInterruptible: boolean;
  /** Every character received for it (`output.delta`), in order. */
  text: string;
  /** `output.done`: the server sent all of it. */
  isComplete: boolean;
  /** Characters played (spoken or shown) and acked. */
  playedChars: number;
  /** Set by `turn.interrupted`: from then on its deltas are dropped and nothing more is played. */
  interruption: { heardChars: number; reason: InterruptionReason } | null;
  /** Set by `message.published`: what entered the thread's history. */
  published: { content: string; isInterrupted: boolean; stateVersion: number } | null;
  /** The turn's run status once `turn.ended` came. */
  runStatus: string | null;
}

/** A user turn the app sent: a transcript (recognised or typed). */
export interface UserUtterance {
  kind: "user";
  key: string;
  transcript: string;
}

export type VoiceEntry = AgentMessage | UserUtterance;

export interface VoiceState {
  connection: "connecting" | "open" | "closed";
  threadId: string | null;
  interruption: InterruptionOptions | null;
  /** `output.paused` until `output.resumed` (or the turn's interruption). */
  isOutputPaused: boolean;
  entries: readonly VoiceEntry[];
  /** The last `error` frame, until dismissed. */
  error: { code: string; message: string } | null;
  /** How the socket closed (null while it is open or opening). */
  closed: { code: number; reason: string; wasOpen: boolean } | null;
}

export type VoiceAction =
  | { type: "frame"; frame: ServerFrame }
  | { type: "closed"; code: number; reason: string; wasOpen: boolean }
  | { type: "played"; messageId: string; playedChars: number }
  | { type: "said"; transcript: string }
  | { type: "dismiss_error" };

/** The state before the socket opened. */
export const INITIAL_VOICE_STATE: VoiceState = {
  connection: "connecting",
  threadId: null,
  interruption: null,
  isOutputPaused: false,
  entries: [],
  error: null,
  closed: null,
};

/** The next state after `action`. */
export function voiceReducer(state: VoiceState, action: VoiceAction): VoiceState {
  switch (action.type) {
    case "frame":
      return applyFrame(state, action.frame);
    case "closed":
      return { ...state, connection: "closed", isOutputPaused: false, closed: { code: action.code, reason: action.reason, wasOpen: action.wasOpen } };
    case "played":
      return updateAgent(state, action.messageId, (message) =>
        message.interruption ? message : { ...message, playedChars: nextAck(message.playedChars, action.playedChars, message.text.length) },
      );
    case "said":
      return { ...state, entries: [...state.entries, { kind: "user", key: `user-${state.entries.length}`, transcript: action.transcript }] };
    case "dismiss_error":
      return { ...state, error: null };
  }
}

function applyFrame(state: VoiceState, frame: ServerFrame): VoiceState {
  switch (frame.type) {
    case "session.ready":
      return { ...state, connection: "open", threadId: frame.thread_id, interruption: frame.interruption };
    case "session.updated":
      return { ...state, interruption: frame.interruption };
    case "turn.started":
      if (findAgent(state, frame.message_id)) return state;
      return {
        ...state,
        entries: [
          ...state.entries,
          {
            kind: "agent",
            messageId: frame.message_id,
            runId: frame.run_id,
            isInterruptible: frame.interruptible,
            text: "",
            isComplete: false,
            playedChars: 0,
            interruption: null,
            published: null,
            runStatus: null,
          },
        ],
      };
    case "output.delta":
      // A delta of an interrupted message was never heard: it is dropped, not shown.
      return updateAgent(state, frame.message_id, (message) => (message.interruption ? message : { ...message, text: message.text + frame.text }));
    case "output.paused":
      return { ...state, isOutputPaused: true };
    case "output.resumed":
      return { ...state, isOutputPaused: false };
    case "output.done":
      return updateAgent(state, frame.message_id, (message) => ({ ...message, isComplete: true }));
    case "turn.interrupted": {
      const next = updateAgent(state, frame.message_id, (message) => ({
        ...message,
        interruption: { heardChars: Math.max(0, frame.heard_chars), reason: frame.reason },
      }));
      return { ...next, isOutputPaused: false };
    }
    case "message.published":
      return updateAgent(state, frame.message_id, (message) => ({
        ...message,
        published: { content: frame.content, isInterrupted: frame.interrupted, stateVersion: frame.state_version },
      }));
    case "turn.ended":
      return { ...state, entries: state.entries.map((entry) => (entry.kind === "agent" && entry.runId === frame.run_id ? { ...entry, runStatus: frame.status } : entry)) };
    case "error":
      return { ...state, error: { code: frame.error, message: frame.message } };
  }
}

function findAgent(state: VoiceState, messageId: string): AgentMessage | undefined {
  return state.entries.find((entry): entry is AgentMessage => entry.kind === "agent" && entry.messageId === messageId);
}

function updateAgent(state: VoiceState, messageId: string, update: (message: AgentMessage) => AgentMessage): VoiceState {
  if (!findAgent(state, messageId)) return state;
  return { ...state, entries: state.entries.map((entry) => (entry.kind === "agent" && entry.messageId === messageId ? update(entry) : entry)) };
}

/** Where an agent message is, for the screen. */
export type AgentMessagePhase = "playing" | "played" | "published" | "interrupted";

/** The phase of `message`: interrupted wins; a message is published whole once the server said so. */
export function agentMessagePhase(message: AgentMessage): AgentMessagePhase {
  if (message.interruption) return "interrupted";
  if (message.published && !message.published.isInterrupted) return "published";
  if (message.isComplete && message.playedChars >= message.text.length) return "played";
  return "playing";
}

/**
 * What the screen shows of `message`: while it plays, only what was played (the visible text mode
 * must not show more than it acked); after an interruption, the heard prefix (as published when
 * the server said so) and the discarded rest; otherwise all of it.
 */
export function agentMessageText(message: AgentMessage): { heard: string; discarded: string } {
  const phase = agentMessagePhase(message);
  if (phase === "interrupted") {
    const { heard, discarded } = splitHeard(message.text, message.interruption!.heardChars);
    return message.published ? { heard: message.published.content, discarded } : { heard, discarded };
  }
  if (phase === "published") return { heard: message.published!.content, discarded: "" };
  return { heard: message.text.slice(0, message.playedChars), discarded: "" };
}
