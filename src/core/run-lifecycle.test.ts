/** The run's life as tables: every status, stop and event against what the runtime must do. */
import { describe, expect, it } from "vitest";
import {
  decideRecovery,
  decideSettle,
  isStopDecided,
  nextStop,
  planAcceptedCancel,
  stopProtocol,
  type SettleAction,
  type StopEvent,
  type StopState,
  type WorkOutcome,
} from "./run-lifecycle.js";
import { canTransition, RUN_STATUSES, type RunStatus } from "./run-status.js";

const STOPS: Record<string, StopState> = {
  none: { kind: "none" },
  requested: { kind: "requested", reason: "user_requested" },
  recorded: { kind: "recorded", reason: "user_requested" },
  unrecorded: { kind: "unrecorded", reason: "user_requested" },
  draining: { kind: "draining" },
  fenced: { kind: "fenced" },
};
const OUTCOMES: readonly WorkOutcome[] = ["done", "provider_cancelled", "model_failed", "publication_rejected", "error"];

describe("nextStop", () => {
  const EVENTS: Record<string, StopEvent> = {
    stop: { type: "stop_requested", reason: "user_requested" },
    recorded: { type: "stop_recorded", reason: "thread_terminated" },
    not_recorded: { type: "stop_not_recorded" },
    drain: { type: "drain" },
    lease_lost: { type: "lease_lost" },
  };
  // [state, event, next state, abort the work now]
  it.each<[string, string, string, boolean]>([
    ["none", "stop", "requested", true],
    ["none", "recorded", "recorded", true], // the cluster's record-then-abort: the notice aborts
    ["none", "not_recorded", "none", false],
    ["none", "drain", "draining", true],
    ["requested", "stop", "requested", false],
    ["requested", "recorded", "recorded", false], // abort-then-record: already aborted
    ["requested", "not_recorded", "unrecorded", false],
    ["requested", "drain", "requested", false],
    ["recorded", "stop", "recorded", false],
    ["recorded", "recorded", "recorded", false],
    ["recorded", "not_recorded", "recorded", false],
    ["recorded", "drain", "recorded", false],
    ["unrecorded", "stop", "unrecorded", false],
    ["unrecorded", "recorded", "recorded", false],
    ["unrecorded", "not_recorded", "unrecorded", false],
    ["unrecorded", "drain", "unrecorded", false],
    ["draining", "stop", "draining", false],
    ["draining", "recorded", "recorded", true], // accepted while draining: it must end cancelled
    ["draining", "not_recorded", "draining", false],
    ["draining", "drain", "draining", false],
    // A lost lease ends every state; only work not yet aborted is aborted now.
    ["none", "lease_lost", "fenced", true],
    ["requested", "lease_lost", "fenced", false],
    ["recorded", "lease_lost", "fenced", false],
    ["unrecorded", "lease_lost", "fenced", false],
    ["draining", "lease_lost", "fenced", false],
    ["fenced", "stop", "fenced", false],
    ["fenced", "recorded", "fenced", false],
    ["fenced", "not_recorded", "fenced", false],
    ["fenced", "drain", "fenced", false],
    ["fenced", "lease_lost", "fenced", false],
  ])("%s + %s → %s (abort: %s)", (state, event, next, abortWork) => {
    const step = nextStop(STOPS[state]!, EVENTS[event]!);
    expect(step.state.kind).toBe(next);
    expect(step.abortWork).toBe(abortWork);
  });

  it("keeps the first Stop's reason", () => {
    expect(nextStop(STOPS.requested!, { type: "stop_recorded", reason: "other" }).state).toEqual({ kind: "recorded", reason: "user_requested" });
    expect(nextStop(STOPS.none!, { type: "stop_recorded", reason: "thread_terminated" }).state).toEqual({ kind: "recorded", reason: "thread_terminated" });
  });

  it("is decided in every state but requested", () => {
    expect(Object.entries(STOPS).filter(([, state]) => !isStopDecided(state)).map(([name]) => name)).toEqual(["requested"]);
  });
});

describe("stopProtocol", () => {
  it("aborts then records where the run executes, records then notifies elsewhere", () => {
    expect(stopProtocol(true)).toBe("abort_then_record");
    expect(stopProtocol(false)).toBe("record_then_notify");
  });
});

describe("planAcceptedCancel", () => {
  // [executes here, cluster, ended at once] → [stop here, notify worker, announce here, end now, admit next]
  it.each<[boolean, boolean, boolean, [boolean, boolean, boolean, boolean, boolean]]>([
    [true, false, false, [true, false, true, false, false]],
    [true, false, true, [true, false, true, true, false]],
    [true, true, false, [true, false, true, false, false]],
    [true, true, true, [true, false, true, true, false]],
    [false, false, false, [false, false, true, false, false]],
    [false, false, true, [false, false, true, true, true]],
    [false, true, false, [false, true, false, false, false]], // the API process of a split deployment
    [false, true, true, [false, false, true, true, true]],
  ])("executes here %s, cluster %s, ended %s", (executesHere, hasCluster, isEnded, expected) => {
    const plan = planAcceptedCancel({ executesHere, hasCluster, isEnded });
    expect([plan.stopWorkHere, plan.notifyWorker, plan.announceHere, plan.endNow, plan.admitNext]).toEqual(expected);
  });
});

describe("decideSettle", () => {
  // Columns: for each stop (none, requested, recorded, unrecorded, draining), each outcome
  // (done, provider_cancelled, model_failed, publication_rejected, error).
  const ABBREVIATIONS: Record<string, SettleAction> = {
    CMP: { kind: "complete" },
    RPC: { kind: "record_provider_cancel" },
    RC: { kind: "report_completed" },
    FC: { kind: "finish_cancelled" },
    HBr: { kind: "hand_back", from: "running" },
    HBi: { kind: "hand_back", from: "interrupted" },
    FNR: { kind: "fail", reason: "error", message: "cancel_not_recorded" },
    FPE: { kind: "fail", reason: "provider_error", message: "model_error" },
    FE: { kind: "fail", reason: "error", message: "run_error" },
    RT: { kind: "report_terminal", isLate: true },
    RTp: { kind: "report_terminal", isLate: false },
    LV: { kind: "leave" },
    RL: { kind: "relinquish" },
  };
  const TABLE: Record<RunStatus, string> = {
    //               none                 | requested           | recorded            | unrecorded          | draining            | fenced
    queued: "        LV  LV  LV  LV  LV   | LV  LV  LV  LV  LV  | LV  LV  LV  LV  LV  | LV  LV  LV  LV  LV  | LV  LV  LV  LV  LV  | RL  RL  RL  RL  RL",
    running: "       CMP RPC FPE FE  FE   | FNR FNR FNR FNR FNR | FNR FNR FNR FNR FNR | FNR FNR FNR FNR FNR | HBr HBr HBr HBr HBr  | RL  RL  RL  RL  RL",
    interrupted: "   LV  LV  LV  LV  LV   | LV  LV  LV  LV  LV  | LV  LV  LV  LV  LV  | LV  LV  LV  LV  LV  | HBi HBi HBi HBi HBi  | RL  RL  RL  RL  RL",
    cancel_requested: "FC FC  FC  FC  FC   | FC  FC  FC  FC  FC  | FC  FC  FC  FC  FC  | FC  FC  FC  FC  FC  | FC  FC  FC  FC  FC  | RL  RL  RL  RL  RL",
    cancelling: "    FC  FC  FC  FC  FC   | FC  FC  FC  FC  FC  | FC  FC  FC  FC  FC  | FC  FC  FC  FC  FC  | FC  FC  FC  FC  FC  | RL  RL  RL  RL  RL",
    completed: "     RC  RC  RC  RC  RC   | RC  RC  RC  RC  RC  | RC  RC  RC  RC  RC  | RC  RC  RC  RC  RC  | RC  RC  RC  RC  RC  | RL  RL  RL  RL  RL",
    failed: "        RT  RT  RT  RTp RT   | RT  RT  RT  RTp RT  | RT  RT  RT  RTp RT  | RT  RT  RT  RTp RT  | RT  RT  RT  RTp RT  | RL  RL  RL  RL  RL",
    cancelled: "     RT  RT  RT  RTp RT   | RT  RT  RT  RTp RT  | RT  RT  RT  RTp RT  | RT  RT  RT  RTp RT  | RT  RT  RT  RTp RT  | RL  RL  RL  RL  RL",
  };
  const stopNames = Object.keys(STOPS);
  const cases = RUN_STATUSES.flatMap((status) => {
    const cells = TABLE[status].replaceAll("|", " ").trim().split(/\s+/);
    expect(cells).toHaveLength(stopNames.length * OUTCOMES.length);
    return stopNames.flatMap((stop, s) => OUTCOMES.map((outcome, o) => [status, stop, outcome, cells[s * OUTCOMES.length + o]!] as const));
  });

  it.each(cases)("%s, stop %s, work %s → %s", (status, stop, outcome, expected) => {
    expect(decideSettle({ status, isSameAttempt: true, stop: STOPS[stop]!, outcome })).toEqual(ABBREVIATIONS[expected]);
  });

  it("writes nothing for an attempt the lease was lost by, in every status", () => {
    for (const [status, stop, outcome] of cases) {
      if (stop === "fenced") continue;
      expect(decideSettle({ status, isSameAttempt: false, stop: STOPS[stop]!, outcome })).toEqual({ kind: "superseded" });
    }
  });

  it("only ever asks for a transition the state machine allows", () => {
    const target: Partial<Record<SettleAction["kind"], RunStatus>> = { complete: "completed", finish_cancelled: "cancelled", hand_back: "queued", fail: "failed" };
    for (const [status, stop, outcome] of cases) {
      const action = decideSettle({ status, isSameAttempt: true, stop: STOPS[stop]!, outcome });
      const to = target[action.kind];
      if (to) expect(canTransition(status, to), `${status} → ${to}`).toBe(true);
    }
  });
});

describe("decideRecovery", () => {
  it.each<[RunStatus, string, string]>([
    ["queued", "claim", "claim"],
    ["running", "fail", "resume"],
    ["interrupted", "fail", "resume"],
    ["cancel_requested", "cancel", "cancel"],
    ["cancelling", "cancel", "cancel"],
    ["completed", "none", "none"],
    ["failed", "none", "none"],
    ["cancelled", "none", "none"],
  ])("%s → %s (policy fail), %s (policy resume)", (status, onFail, onResume) => {
    expect(decideRecovery(status, "fail").kind).toBe(onFail);
    expect(decideRecovery(status, "resume").kind).toBe(onResume);
  });
});
