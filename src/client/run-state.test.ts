import { describe, expect, it } from "vitest";
import type { RunEvent } from "../core/run-event.js";
import { canRunTransition, IDLE_RUN, reduceRun, runFlags, type RunPhase, type RunState } from "./run-state.js";
import type { RunView } from "./wire-types.js";

const RUN_ID = "run_01jd8x0f1ae2rbv7c9ks0d8m5q";
const event = (type: string, fields: Record<string, unknown> = {}): RunEvent => ({ type, run_id: RUN_ID, seq: 1, ...fields }) as RunEvent;
const observed = (status: string, fields: Partial<RunView> = {}): RunView =>
  ({ run_id: RUN_ID, status, attempt: 1, cancel_reason: null, failure_reason: null, failure_message: null, active_operation: null, published_message_id: null, ...fields }) as RunView;
const at = (status: RunPhase): RunState => ({ ...IDLE_RUN, status, runId: RUN_ID });

describe("the client's run state machine", () => {
  it.each<[RunPhase, RunPhase, boolean]>([
    ["idle", "starting", true],
    ["idle", "running", false],
    ["starting", "completed", true], // a repeated create returns the run as it is now
    ["starting", "idle", true], // the create was refused
    ["queued", "running", true],
    ["running", "cancel_requested", true],
    ["running", "cancelled", true], // a later status read after a reconnect: a forward jump
    ["interrupted", "running", true],
    ["cancel_requested", "cancelling", true],
    ["cancel_requested", "running", false], // never back: a cancel is never undone
    ["cancel_requested", "completed", false], // after an accepted cancel the run never completes
    ["cancelling", "cancelled", true],
    ["completed", "cancelled", false], // terminal is sticky
    ["cancelled", "running", false],
    ["failed", "completed", false],
    ["cancelled", "starting", true], // only a new run leaves a terminal state
  ])("%s → %s: %s", (from, to, allowed) => {
    expect(canRunTransition(from, to)).toBe(allowed);
  });

  it("follows the events of a stopped run and ignores what comes after the terminal one", () => {
    let state = reduceRun(IDLE_RUN, { type: "start", runId: RUN_ID });
    state = reduceRun(state, { type: "observed", run: observed("queued") });
    const steps: [RunEvent, RunPhase][] = [
      [event("run.started", { attempt: 1, status: "running" }), "running"],
      [event("message.delta", { message_id: "msg_1", text: "Hi" }), "running"],
      [event("run.cancel_requested", { reason: "user_requested", accepted_state_version: 4, resume_checkpoint_id: "cp_1" }), "cancel_requested"],
      [event("run.cancelling", { active_operation: "op_1" }), "cancelling"],
      [event("run.cancelled", { reason: "user_requested", resume_checkpoint_id: "cp_1", discarded_stream_chars: 2, external_effects: [] }), "cancelled"],
      [event("run.completed", { state_version: 5, published_message_id: "msg_1" }), "cancelled"],
    ];
    for (const [next, status] of steps) {
      state = reduceRun(state, { type: "event", event: next });
      expect(state.status).toBe(status);
    }
    expect(state).toMatchObject({ cancelReason: "user_requested", activeOperation: null, publishedMessageId: null });
  });

  it("keeps a pending approval only while interrupted", () => {
    let state = at("running");
    state = reduceRun(state, { type: "event", event: event("run.interrupted", { op_id: "op_1", tool: "send_email", idempotency_key: "k", preview: { to: "a" } }) });
    expect(state.pendingApproval).toEqual({ opId: "op_1", tool: "send_email", idempotencyKey: "k", preview: { to: "a" } });
    expect(runFlags(state)).toMatchObject({ canApprove: true, isAwaitingApproval: true, canStop: true, isRunning: false });
    state = reduceRun(state, { type: "event", event: event("run.resumed", { op_id: "op_1", decision: "approved" }) });
    expect(state.pendingApproval).toBeNull();
    expect(runFlags(state).canApprove).toBe(false);
  });

  it("ignores events and replies of another run, and a stale status read", () => {
    const state = at("cancel_requested");
    expect(reduceRun(state, { type: "event", event: { ...event("run.started", { attempt: 1 }), run_id: "run_other" } })).toBe(state);
    expect(reduceRun(state, { type: "observed", run: observed("running") })).toBe(state);
    expect(reduceRun(state, { type: "observed", run: { ...observed("completed"), run_id: "run_other" } })).toBe(state);
  });

  it("records a failure with its reason", () => {
    const state = reduceRun(at("running"), { type: "event", event: event("run.failed", { reason: "worker_lost", message: "lost" }) });
    expect(state).toMatchObject({ status: "failed", failure: { reason: "worker_lost", message: "lost" } });
  });

  it.each<[RunPhase, Partial<ReturnType<typeof runFlags>>]>([
    ["idle", { isActive: false, isRunning: false, canSend: true, canStop: false, isTerminal: false }],
    ["starting", { isActive: true, isRunning: true, canStop: true, canSend: false }],
    ["running", { isActive: true, isRunning: true, canStop: true, isCancelling: false }],
    ["cancel_requested", { isActive: true, isRunning: false, isCancelling: true, canStop: false, canContinue: false }],
    ["cancelling", { isCancelling: true, canSend: false }],
    ["cancelled", { isTerminal: true, canContinue: true, canSend: true, isActive: false }],
    ["completed", { isTerminal: true, canContinue: false, canSend: true }],
    ["failed", { isTerminal: true, canContinue: false }],
  ])("flags of %s come from the state alone", (status, flags) => {
    expect(runFlags(at(status))).toMatchObject(flags);
  });

  it("survives a JSON round trip (a UI may persist it)", () => {
    const state = reduceRun(at("running"), { type: "event", event: event("run.cancel_requested", { reason: "user_requested" }) });
    const restored = JSON.parse(JSON.stringify(state)) as RunState;
    expect(restored).toEqual(state);
    expect(runFlags(restored)).toEqual(runFlags(state));
  });
});
