import { describe, expect, it } from "vitest";
import type { RunEvent } from "../core/run-event.js";
import { IDLE_RUN } from "./run-state.js";
import { emptyPlan } from "./plan-state.js";
import { applyHistory, applyRunEvent, availableActions, initialSessionState, startRunBody, toSnapshot, type SessionState } from "./session-state.js";
import type { HistoryView, MessageView } from "./wire-types.js";

const RUN_ID = "run_01jd8x0f1ae2rbv7c9ks0d8m5q";
const NOW = new Date("2026-01-01T00:00:00Z");
let seq = 0;
const event = (type: string, fields: Record<string, unknown> = {}): RunEvent => ({ type, run_id: RUN_ID, seq: ++seq, ...fields }) as RunEvent;
const delta = (text: string, messageId = "msg_a") => event("message.delta", { message_id: messageId, text });

function running(): SessionState {
  seq = 0;
  return { ...initialSessionState("thr_1"), stateVersion: 2, headCheckpointId: "cp_2", run: { ...IDLE_RUN, status: "running", runId: RUN_ID } };
}

function apply(state: SessionState, ...events: RunEvent[]): SessionState {
  return events.reduce((current, next) => applyRunEvent(current, next, NOW).state, state);
}

const message = (id: string, version: number, fields: Partial<MessageView> = {}): MessageView =>
  ({ message_id: id, role: "assistant", content: id, state_version: version, publication_status: "published", position: version, ...fields }) as MessageView;

describe("the session's pure state", () => {
  it("keeps deltas as a draft and moves the draft into history only on message.published", () => {
    const streamed = apply(running(), delta("Hello"), delta(" world"));
    expect(streamed.draft).toMatchObject({ text: "Hello world", lastSeq: 2, status: "streaming" });
    expect(streamed.history).toEqual([]);
    const published = applyRunEvent(streamed, event("message.published", { message_id: "msg_a", state_version: 3, checkpoint_id: "cp_3", role: "assistant" }), NOW);
    expect(published.refreshHistory).toBe(false);
    expect(published.state.draft).toBeNull();
    expect(published.state.history).toEqual([expect.objectContaining({ message_id: "msg_a", content: "Hello world", publication_status: "published" })]);
    expect([published.state.stateVersion, published.state.headCheckpointId]).toEqual([3, "cp_3"]);
  });

  it("never turns deltas after run.cancel_requested into the draft or history", () => {
    const stopped = apply(
      running(),
      delta("Seen"),
      event("run.cancel_requested", { reason: "user_requested", accepted_state_version: 3, resume_checkpoint_id: "cp_3" }),
      delta(" late"),
      event("run.cancelled", { reason: "user_requested", resume_checkpoint_id: "cp_3", discarded_stream_chars: 9, external_effects: [] }),
    );
    expect(stopped.draft).toMatchObject({ text: "Seen", lastSeq: 1, status: "stopped" });
    expect(stopped.history).toEqual([]);
    expect(stopped.resumePoint).toEqual({ checkpointId: "cp_3", stateVersion: 3 });
    expect(availableActions(stopped)).toMatchObject({ canContinue: true, canSaveWhatISaw: true, canDeleteDraft: true, canStop: false, canBranch: true });
  });

  it("does not publish a stopped draft's text even if its message is published (the Stop came too late)", () => {
    const state = apply(running(), delta("Par"));
    const stopped = { ...state, draft: { ...state.draft!, status: "stopped" as const } };
    const result = applyRunEvent(stopped, event("message.published", { message_id: "msg_a", state_version: 3, checkpoint_id: "cp_3", role: "assistant" }), NOW);
    expect(result.state.history).toEqual([]);
    expect(result.state.draft).toBeNull();
    expect(result.refreshHistory).toBe(true); // the published text comes from history, the truth
  });

  it("never starts a second copy of a message a late history read already holds", () => {
    const streamed = apply(running(), delta("Hello"));
    // The history read begun at send() returns after the server published the whole answer.
    const reply: HistoryView = {
      thread_id: "thr_1",
      state_version: 3,
      head_checkpoint_id: "cp_3",
      messages: [message("msg_a", 3, { content: "Hello world" })],
      has_earlier: false,
      operations: [],
      markers: [],
    };
    const withHistory = applyHistory(streamed, reply);
    const late = apply(withHistory, delta(" world"), event("message.published", { message_id: "msg_a", state_version: 3, checkpoint_id: "cp_3", role: "assistant" }));
    expect(late.draft).toBeNull();
    expect(late.history.filter((entry) => entry.message_id === "msg_a")).toEqual([expect.objectContaining({ content: "Hello world" })]);
  });

  it("ignores events of another run", () => {
    const state = running();
    expect(applyRunEvent(state, { ...delta("x"), run_id: "run_other" }, NOW).state).toBe(state);
  });

  it("takes a history reply as the truth but keeps newer local entries, and never goes back a version", () => {
    const state: SessionState = { ...running(), stateVersion: 4, history: [message("msg_old", 3), message("msg_new", 4)] };
    const reply: HistoryView = {
      thread_id: "thr_1",
      state_version: 3,
      head_checkpoint_id: "cp_3",
      messages: [message("msg_user", 2, { role: "user" }), message("msg_old", 3)],
      has_earlier: false,
      operations: [],
      markers: [],
    };
    const next = applyHistory(state, reply);
    expect(next.history.map((entry) => entry.message_id)).toEqual(["msg_user", "msg_old", "msg_new"]);
    expect(next.stateVersion).toBe(4);
    expect(applyHistory(state, { ...reply, thread_id: "thr_other" })).toBe(state);
  });

  it("offers only what the server can do: nothing but resolving while a conflict stands", () => {
    const state: SessionState = {
      ...initialSessionState("thr_1"),
      resumePoint: { checkpointId: "cp_3", stateVersion: 3 },
      conflict: { message: "moved", currentStateVersion: 4, currentCheckpointId: "cp_4", allowedActions: ["reload", "fork_from_cp_3"], forkCheckpointId: "cp_3", attempted: { kind: "continue" } },
    };
    expect(availableActions(state)).toEqual({
      canSend: false,
      canStop: false,
      canContinue: false,
      canChangeAndContinue: false,
      canBranch: true,
      canDeleteDraft: false,
      canSaveWhatISaw: false,
      canApprove: false,
      canResolveConflict: true,
    });
  });

  it("survives a JSON round trip, flags included", () => {
    const state = apply(running(), delta("Hi"), event("run.cancel_requested", { reason: "r", accepted_state_version: 3, resume_checkpoint_id: "cp_3" }));
    const restored = JSON.parse(JSON.stringify(state)) as SessionState;
    expect(restored).toEqual(state);
    expect(toSnapshot(restored)).toEqual(toSnapshot(state));
  });
});

describe("the actions while a Stop is pending", () => {
  it("offers no second Stop, no approval and no save until the server answered; a completed run offers no save", () => {
    const state = apply(running(), delta("Seen"));
    const pending: SessionState = { ...state, draft: { ...state.draft!, status: "stopped" }, stop: { runId: RUN_ID, status: "unconfirmed", failedAttempts: 1, failure: "down", outcome: null } };
    expect(availableActions(pending)).toMatchObject({ canStop: false, canSend: false, canSaveWhatISaw: false, canContinue: false });
    const tooLate = apply(pending, event("run.completed", { state_version: 3, published_message_id: "msg_a" }));
    expect(tooLate.stop).toMatchObject({ status: "confirmed", outcome: "completed" });
    expect(availableActions(tooLate)).toMatchObject({ canSaveWhatISaw: false, canSend: true, canContinue: false });
  });
});

describe("a plan's run in the session", () => {
  const published = (messageId: string, version: number) =>
    event("message.published", { message_id: messageId, state_version: version, checkpoint_id: `cp_${version}`, role: "assistant" });

  it("keeps each message's own text while steps stream at the same time; the draft is the one that streamed last", () => {
    const streamed = apply(running(), delta("A1", "msg_a"), delta("B1", "msg_b"), delta(" A2", "msg_a"), delta(" B2", "msg_b"));
    expect(streamed.draft).toMatchObject({ messageId: "msg_b", text: "B1 B2" });
    expect(streamed.streams.map((stream) => [stream.messageId, stream.text])).toEqual([
      ["msg_a", "A1 A2"],
      ["msg_b", "B1 B2"],
    ]);
    const afterA = apply(streamed, published("msg_a", 3));
    expect(afterA.streams.map((stream) => stream.messageId)).toEqual(["msg_b"]);
    // msg_a was not the draft: its text (and label) come from history.
    expect(afterA.history).toEqual([]);
    const afterB = applyRunEvent(afterA, published("msg_b", 4), NOW);
    expect(afterB.state.history).toEqual([expect.objectContaining({ message_id: "msg_b", content: "B1 B2", label: null })]);
    expect(afterB.state.streams).toEqual([]);
    // A chat run's answer needs no read; a plan's section does (its label).
    expect(afterB.refreshHistory).toBe(false);
    const planRun = { ...afterA, plan: emptyPlan(RUN_ID, "research") };
    expect(applyRunEvent(planRun, published("msg_b", 4), NOW).refreshHistory).toBe(true);
  });

  it("follows the steps from step.updated and run.cancelling, and stops streaming at the Stop", () => {
    const state = apply(
      running(),
      event("step.updated", { step_id: "subtask-1", status: "in_progress", depends_on: [], title: "One", parent_step_id: null, checkpoint_id: null, reused: false }),
      delta("Half", "msg_a"),
      event("run.cancel_requested", { reason: "user_requested", accepted_state_version: 3, resume_checkpoint_id: "cp_3" }),
      event("run.cancelling", { active_operation: null, steps: ["subtask-1"] }),
    );
    expect(state.plan).toMatchObject({ runId: RUN_ID, finishing: ["subtask-1"], steps: [{ stepId: "subtask-1", status: "in_progress", title: "One" }] });
    expect(state.streams).toEqual([]);
    expect(state.draft).toMatchObject({ status: "stopped" });
  });

  it("sends the chosen agent and config with a new message only when chosen; a Continue keeps the stopped run's", () => {
    const state: SessionState = { ...initialSessionState("thr_1"), stateVersion: 3, resumePoint: { checkpointId: "cp_3", stateVersion: 3 } };
    expect(startRunBody({ kind: "send", text: "Hi" }, state)).toEqual({ input: { role: "user", content: "Hi" }, expected_state_version: 3 });
    expect(startRunBody({ kind: "send", text: "Hi", agent: "research", config: { max_parallel: 2 } }, state)).toEqual({
      input: { role: "user", content: "Hi" },
      agent: "research",
      config: { max_parallel: 2 },
      expected_state_version: 3,
    });
    expect(startRunBody({ kind: "continue" }, state)).toEqual({ resume_from_checkpoint_id: "cp_3", expected_state_version: 3 });
  });
});
