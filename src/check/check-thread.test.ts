import { describe, expect, it } from "vitest";
import {
  emptyStats,
  type CheckpointRecord,
  type MessageRecord,
  type OperationRecord,
  type RunRecord,
  type RunStatus,
  type RunStepRecord,
  type RunTransitionRecord,
} from "../core/index.js";
import type { ThreadSnapshot } from "../store/index.js";
import { checkThread } from "./check-thread.js";

const tenantId = "ten_a";
const threadId = "thr_a";

function checkpoint(
  checkpointId: string,
  stateVersion: number,
  parentCheckpointId: string | null,
  kind: CheckpointRecord["kind"],
  runId: string | null,
  messageId: string | null,
): CheckpointRecord {
  return {
    tenantId,
    checkpointId,
    threadId,
    parentCheckpointId,
    stateVersion,
    kind,
    runId,
    messageId,
    completedStepId: null,
    pendingStep: null,
    resumePolicy: null,
    cancelledGeneration: null,
    createdAt: stateVersion,
  };
}

function message(
  messageId: string,
  position: number,
  role: MessageRecord["role"],
  runId: string,
  stateVersion: number,
  checkpointId: string,
): MessageRecord {
  return {
    tenantId,
    messageId,
    threadId,
    position,
    role,
    content: `content of ${messageId}`,
    runId,
    stateVersion,
    checkpointId,
    publicationStatus: "published",
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    label: null,
    interrupted: false,
    format: "text",
    createdAt: stateVersion,
  };
}

function run(runId: string, status: RunStatus, baseCheckpointId: string, inputMessageId: string): RunRecord {
  return {
    tenantId,
    runId,
    threadId,
    status,
    attempt: 1,
    baseCheckpointId,
    input: { role: "user", content: "hi" },
    inputMessageId,
    idempotencyKey: null,
    requestHash: "hash",
    model: "demo",
    agent: "chat",
    config: null,
    instructions: null,
    metadata: {},
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    stateVersion: 0,
    cancelRequestedAt: null,
    cancelReason: null,
    cancelStateVersion: null,
    cancelCheckpointId: null,
    publishedMessageId: null,
    activeOperation: null,
    failureReason: null,
    failureMessage: null,
    stats: emptyStats(),
    leaseOwner: null,
    leaseExpiresAt: null,
    isWaiting: false,
    createdAt: 0,
    startedAt: null,
    endedAt: null,
  };
}

function operation(opId: string, runId: string, idempotencyKey: string, commitAttempts: number): OperationRecord {
  return {
    tenantId,
    opId,
    threadId,
    runId,
    toolName: "send_quote",
    toolCallId: `call_${opId}`,
    idempotencyKey,
    phase: commitAttempts === 0 ? "abandoned" : "committed",
    input: "{}",
    preview: null,
    result: commitAttempts === 0 ? null : { sent: true },
    error: null,
    commitAttempts,
    createdAt: 0,
    updatedAt: 0,
  };
}

function walk(runId: string, ...statuses: RunStatus[]): RunTransitionRecord[] {
  return statuses.map((to, index) => ({
    tenantId,
    runId,
    ordinal: index + 1,
    from: index === 0 ? null : statuses[index - 1]!,
    to,
    at: index,
  }));
}

/**
 * What the SQLite store writes for: a thread; run_1 that publishes and completes; run_2 that is
 * cancelled while running. Versions: 1 root, 2 input 1, 3 answer 1, 4 input 2, 5 cancel.
 */
function cleanSnapshot(): ThreadSnapshot {
  const completed = { ...run("run_1", "completed", "cp_1", "msg_1"), stateVersion: 3, publishedMessageId: "msg_2" };
  const cancelled = {
    ...run("run_2", "cancelled", "cp_3", "msg_3"),
    stateVersion: 5,
    cancelRequestedAt: 5,
    cancelReason: "user",
    cancelStateVersion: 5,
    cancelCheckpointId: "cp_5",
  };
  return {
    thread: {
      tenantId,
      threadId,
      status: "active",
      stateVersion: 5,
      headCheckpointId: "cp_5",
      activeRunId: null,
      title: null,
      metadata: {},
      stats: emptyStats(),
      forkedFrom: null,
      createdAt: 0,
      updatedAt: 5,
    },
    checkpoints: [
      checkpoint("cp_1", 1, null, "thread_created", null, null),
      checkpoint("cp_2", 2, "cp_1", "input_accepted", "run_1", "msg_1"),
      checkpoint("cp_3", 3, "cp_2", "message_published", "run_1", "msg_2"),
      checkpoint("cp_4", 4, "cp_3", "input_accepted", "run_2", "msg_3"),
      checkpoint("cp_5", 5, "cp_4", "cancel_accepted", "run_2", null),
    ],
    messages: [
      message("msg_1", 0, "user", "run_1", 2, "cp_2"),
      message("msg_2", 1, "assistant", "run_1", 3, "cp_3"),
      message("msg_3", 2, "user", "run_2", 4, "cp_4"),
    ],
    runs: [completed, cancelled],
    transitions: [
      ...walk("run_1", "queued", "running", "completed"),
      ...walk("run_2", "queued", "running", "cancel_requested", "cancelled"),
    ],
    // run_1 sent one quote; run_2 prepared another and was stopped before the commit.
    operations: [operation("op_1", "run_1", "quote:1:send", 1), operation("op_2", "run_2", "quote:2:send", 0)],
    steps: [],
  };
}

/** Appends a checkpoint and a message for `runId` as the new head, keeping invariants 1 and 5. */
function publishAfterCancel(snapshot: ThreadSnapshot, runId: string): void {
  snapshot.checkpoints.push(checkpoint("cp_6", 6, "cp_5", "message_published", runId, "msg_4"));
  snapshot.messages.push(message("msg_4", 3, "assistant", runId, 6, "cp_6"));
  snapshot.thread.stateVersion = 6;
  snapshot.thread.headCheckpointId = "cp_6";
}

function step(runId: string, stepId: string, ordinal: number, fields: Partial<RunStepRecord>): RunStepRecord {
  return {
    tenantId,
    runId,
    threadId,
    stepId,
    ordinal,
    parentStepId: null,
    title: null,
    dependsOn: [],
    status: "not_started",
    inputHash: null,
    startedAt: null,
    endedAt: null,
    checkpointId: null,
    messageId: null,
    result: null,
    reusedFromRunId: null,
    error: null,
    ...fields,
  };
}

/**
 * The clean thread with plans: run_1's step `answer` published msg_2 (cp_3); run_2 carried
 * `answer` over from run_1, its `search` started and was cancelled with it, and `write` (after
 * both) never started.
 */
function planSnapshot(): ThreadSnapshot {
  const snapshot = cleanSnapshot();
  snapshot.checkpoints[2]!.completedStepId = "answer";
  snapshot.steps = [
    step("run_1", "answer", 0, { status: "completed", startedAt: 2, endedAt: 3, checkpointId: "cp_3", messageId: "msg_2" }),
    step("run_2", "answer", 0, { status: "completed", checkpointId: "cp_3", messageId: "msg_2", reusedFromRunId: "run_1" }),
    step("run_2", "search", 1, { status: "cancelled", startedAt: 4, endedAt: 5 }),
    step("run_2", "write", 2, { status: "cancelled", dependsOn: ["answer", "search"], endedAt: 5 }),
  ];
  return snapshot;
}

const byId = <T>(items: T[], pick: (item: T) => string, id: string): T => items.find((item) => pick(item) === id)!;
const cp = (snapshot: ThreadSnapshot, id: string) => byId(snapshot.checkpoints, (c) => c.checkpointId, id);
const msg = (snapshot: ThreadSnapshot, id: string) => byId(snapshot.messages, (m) => m.messageId, id);
const rn = (snapshot: ThreadSnapshot, id: string) => byId(snapshot.runs, (r) => r.runId, id);
const op = (snapshot: ThreadSnapshot, id: string) => byId(snapshot.operations, (o) => o.opId, id);
const st = (snapshot: ThreadSnapshot, runId: string, id: string) => byId(snapshot.steps, (s) => `${s.runId}/${s.stepId}`, `${runId}/${id}`);

/** Each expected violation: its invariant and a fragment of its detail. */
type Expected = { invariant: number; detail: RegExp; runId?: string; messageId?: string; operationId?: string; stepId?: string }[];

interface Case {
  name: string;
  corrupt: (snapshot: ThreadSnapshot) => void;
  expected: Expected;
}

function expectViolations(snapshot: ThreadSnapshot, expected: Expected): void {
  const violations = checkThread(snapshot);
  expect(violations).toHaveLength(expected.length);
  expected.forEach((want, index) => {
    expect(violations[index]).toMatchObject({
      invariant: want.invariant,
      tenantId,
      threadId,
      detail: expect.stringMatching(want.detail),
      ...(want.runId ? { runId: want.runId } : {}),
      ...(want.messageId ? { messageId: want.messageId } : {}),
      ...(want.operationId ? { operationId: want.operationId } : {}),
      ...(want.stepId ? { stepId: want.stepId } : {}),
    });
  });
}

const cases: Case[] = [
  {
    name: "1: a published message's checkpoint is missing",
    corrupt: (s) => {
      msg(s, "msg_2").checkpointId = "cp_gone";
    },
    expected: [{ invariant: 1, messageId: "msg_2", detail: /points at missing checkpoint cp_gone/ }],
  },
  {
    name: "1: a user message's checkpoint does not reference it",
    corrupt: (s) => {
      cp(s, "cp_2").messageId = null;
    },
    expected: [{ invariant: 1, messageId: "msg_1", detail: /cp_2 does not publish message msg_1/ }],
  },
  {
    name: "1: a fragment whose checkpoint names another message",
    corrupt: (s) => {
      msg(s, "msg_2").publicationStatus = "fragment";
      cp(s, "cp_3").messageId = "msg_1";
    },
    expected: [{ invariant: 1, messageId: "msg_2", detail: /fragment|does not publish message msg_2/ }],
  },
  {
    name: "2: a key handed to the external system twice",
    corrupt: (s) => {
      op(s, "op_1").commitAttempts = 2;
    },
    expected: [{ invariant: 2, runId: "run_1", operationId: "op_1", detail: /quote:1:send\) was handed to the external system 2 times/ }],
  },
  {
    name: "2: two operations share a key",
    corrupt: (s) => {
      op(s, "op_2").idempotencyKey = "quote:1:send";
    },
    expected: [{ invariant: 2, runId: "run_2", operationId: "op_2", detail: /op_1 and op_2 share the idempotency key quote:1:send/ }],
  },
  {
    name: "3: a run continues from a checkpoint outside the thread",
    corrupt: (s) => {
      rn(s, "run_2").baseCheckpointId = "cp_elsewhere";
    },
    expected: [{ invariant: 3, runId: "run_2", detail: /continues from checkpoint cp_elsewhere/ }],
  },
  {
    name: "3: a checkpoint's parent is missing",
    corrupt: (s) => {
      cp(s, "cp_4").parentCheckpointId = "cp_gone";
    },
    expected: [{ invariant: 3, detail: /cp_4 \(v4\) has missing parent cp_gone/ }],
  },
  {
    name: "3: a non-root checkpoint has no parent",
    corrupt: (s) => {
      cp(s, "cp_2").parentCheckpointId = null;
    },
    expected: [{ invariant: 3, detail: /cp_2 \(v2\) has no parent/ }],
  },
  {
    name: "4: a cancelled run publishes after its cancel was accepted",
    corrupt: (s) => publishAfterCancel(s, "run_2"),
    expected: [{ invariant: 4, runId: "run_2", messageId: "msg_4", detail: /at v6, after its cancel was accepted at v5/ }],
  },
  {
    name: "4: a cancelled run records no accepted cancel version",
    corrupt: (s) => {
      Object.assign(rn(s, "run_2"), { cancelStateVersion: null, cancelCheckpointId: null });
    },
    expected: [{ invariant: 4, runId: "run_2", detail: /is cancelled but records no accepted cancel version/ }],
  },
  {
    name: "4: the cancel version has no cancel_accepted checkpoint",
    corrupt: (s) => {
      rn(s, "run_2").cancelStateVersion = 4;
    },
    expected: [{ invariant: 4, runId: "run_2", detail: /no cancel_accepted checkpoint at that version/ }],
  },
  {
    name: "5: a gap in the checkpoint versions",
    corrupt: (s) => {
      cp(s, "cp_5").stateVersion = 6;
      s.thread.stateVersion = 6;
      rn(s, "run_2").cancelStateVersion = 6;
    },
    expected: [
      { invariant: 5, detail: /no checkpoint holds v5 of 6/ },
      { invariant: 5, detail: /cp_5 \(v6\) has parent cp_4 at v4, not v5/ },
    ],
  },
  {
    name: "5: two checkpoints share a version",
    corrupt: (s) => {
      s.checkpoints.push(checkpoint("cp_4b", 4, "cp_3", "input_accepted", "run_2", null));
    },
    expected: [{ invariant: 5, detail: /v4 is shared by checkpoints cp_4, cp_4b/ }],
  },
  {
    name: "5: a checkpoint beyond the thread's version",
    corrupt: (s) => {
      s.checkpoints.push(checkpoint("cp_6", 6, "cp_5", "step_completed", "run_2", null));
    },
    expected: [
      { invariant: 5, detail: /cp_6 has v6, outside the thread's 1..5/ },
      { invariant: 5, detail: /head checkpoint cp_5 has v5 but cp_6 has v6/ },
    ],
  },
  {
    name: "5: the head is not the newest checkpoint",
    corrupt: (s) => {
      s.thread.headCheckpointId = "cp_4";
    },
    expected: [{ invariant: 5, detail: /head checkpoint cp_4 has v4 but cp_5 has v5/ }],
  },
  {
    name: "5: the head is not in the thread",
    corrupt: (s) => {
      s.thread.headCheckpointId = "cp_gone";
    },
    expected: [{ invariant: 5, detail: /head checkpoint cp_gone is not in the thread/ }],
  },
  {
    name: "5: a message's version differs from its checkpoint's",
    corrupt: (s) => {
      msg(s, "msg_2").stateVersion = 4;
    },
    expected: [{ invariant: 5, messageId: "msg_2", detail: /msg_2 has v4 but its checkpoint cp_3 has v3/ }],
  },
  {
    name: "6: a transition leaves a terminal status",
    corrupt: (s) => {
      s.transitions.push({ tenantId, runId: "run_1", ordinal: 4, from: "completed", to: "running", at: 9 });
      rn(s, "run_1").status = "running";
    },
    expected: [{ invariant: 6, runId: "run_1", detail: /#4 completed → running leaves terminal status completed/ }],
  },
  {
    name: "6: a transition the machine does not allow",
    corrupt: (s) => {
      s.transitions = [
        ...walk("run_1", "queued", "completed"),
        ...s.transitions.filter((t) => t.runId !== "run_1"),
      ];
    },
    expected: [{ invariant: 6, runId: "run_1", detail: /#2 queued → completed is not allowed/ }],
  },
  {
    name: "6: a transition does not start where the previous one ended",
    corrupt: (s) => {
      const third = s.transitions.find((t) => t.runId === "run_2" && t.ordinal === 3)!;
      third.from = "queued";
    },
    expected: [
      { invariant: 6, runId: "run_2", detail: /#3 queued → cancel_requested is not allowed/ },
      { invariant: 6, runId: "run_2", detail: /#3 queued → cancel_requested does not start where #2 ended \(running\)/ },
    ],
  },
  {
    name: "6: the first transition is not null → queued",
    corrupt: (s) => {
      s.transitions = s.transitions.filter((t) => !(t.runId === "run_1" && t.ordinal === 1));
      for (const t of s.transitions) if (t.runId === "run_1") t.ordinal -= 1;
    },
    expected: [
      { invariant: 6, runId: "run_1", detail: /starts with queued → running, not null → queued/ },
    ],
  },
  {
    name: "6: ordinals with a gap",
    corrupt: (s) => {
      const last = s.transitions.find((t) => t.runId === "run_2" && t.ordinal === 4)!;
      last.ordinal = 5;
    },
    expected: [{ invariant: 6, runId: "run_2", detail: /ordinals 1,2,3,5, not 1..4/ }],
  },
  {
    name: "6: the last transition disagrees with the run's status",
    corrupt: (s) => {
      rn(s, "run_1").status = "failed";
    },
    expected: [{ invariant: 6, runId: "run_1", detail: /is failed but its last transition ends in completed/ }],
  },
  {
    name: "6: a run without transitions",
    corrupt: (s) => {
      s.transitions = s.transitions.filter((t) => t.runId !== "run_2");
    },
    expected: [{ invariant: 6, runId: "run_2", detail: /has no recorded transitions/ }],
  },
];

describe("checkThread", () => {
  it("finds nothing in a clean thread", () => {
    expect(checkThread(cleanSnapshot())).toEqual([]);
  });

  it("accepts a fragment the client saved after the cancel (DESIGN §9)", () => {
    const snapshot = cleanSnapshot();
    publishAfterCancel(snapshot, "run_2");
    msg(snapshot, "msg_4").publicationStatus = "fragment";
    expect(checkThread(snapshot)).toEqual([]);
  });

  it("ignores invariant 1 for a deleted draft", () => {
    const snapshot = cleanSnapshot();
    Object.assign(msg(snapshot, "msg_2"), { publicationStatus: "deleted", checkpointId: "cp_gone" });
    expect(checkThread(snapshot)).toEqual([]);
  });

  it.each(cases)("finds $name", ({ corrupt, expected }) => {
    const snapshot = cleanSnapshot();
    corrupt(snapshot);
    expectViolations(snapshot, expected);
  });

  it("accepts a key prepared again after a failed attempt (one attempt per preparation)", () => {
    const snapshot = cleanSnapshot();
    Object.assign(op(snapshot, "op_2"), { phase: "committing", commitAttempts: 1 });
    expect(checkThread(snapshot)).toEqual([]);
  });

  it("does not throw on a status the machine does not know", () => {
    const snapshot = cleanSnapshot();
    const transition = snapshot.transitions.find((t) => t.runId === "run_1" && t.ordinal === 3)!;
    transition.to = "exploded" as RunStatus;
    expect(checkThread(snapshot).map((v) => v.detail)).toEqual([
      expect.stringMatching(/#3 running → exploded names an unknown status/),
      expect.stringMatching(/is completed but its last transition ends in exploded/),
    ]);
  });
});

const planCases: Case[] = [
  {
    name: "9: a completed run's step is still in progress",
    corrupt: (s) => {
      st(s, "run_1", "answer").status = "in_progress";
    },
    expected: [{ invariant: 9, runId: "run_1", stepId: "answer", detail: /run run_1 is completed but its step answer is in_progress/ }],
  },
  {
    name: "9: a cancelled run's step never ended",
    corrupt: (s) => {
      Object.assign(st(s, "run_2", "write"), { status: "not_started", endedAt: null });
    },
    expected: [{ invariant: 9, runId: "run_2", stepId: "write", detail: /run run_2 is cancelled but its step write is not_started/ }],
  },
  {
    name: "10: a completed step without a checkpoint",
    corrupt: (s) => {
      st(s, "run_1", "answer").checkpointId = null;
    },
    expected: [{ invariant: 10, runId: "run_1", stepId: "answer", detail: /completed step answer of run run_1 has no checkpoint/ }],
  },
  {
    name: "10: a reused step whose earlier checkpoint is gone",
    corrupt: (s) => {
      st(s, "run_2", "answer").checkpointId = "cp_gone";
    },
    expected: [
      { invariant: 10, runId: "run_2", stepId: "answer", detail: /answer of run run_2 \(reused from run run_1\) points at checkpoint cp_gone, which is not in the thread's lineage/ },
    ],
  },
  {
    name: "10: a completed step whose checkpoint completes another step",
    corrupt: (s) => {
      cp(s, "cp_3").completedStepId = "draft";
    },
    expected: [{ invariant: 10, runId: "run_1", stepId: "answer", detail: /answer of run run_1 points at checkpoint cp_3, which completes step draft/ }],
  },
  {
    name: "11: a step started after its dependency was cancelled",
    corrupt: (s) => {
      st(s, "run_2", "write").startedAt = 5;
    },
    expected: [{ invariant: 11, runId: "run_2", stepId: "write", detail: /step write of run run_2 started, but its dependency search ended cancelled/ }],
  },
  {
    name: "11: a step completed after its dependency failed (and its checkpoint records no step)",
    corrupt: (s) => {
      st(s, "run_2", "search").status = "failed";
      Object.assign(st(s, "run_2", "write"), { status: "completed", checkpointId: "cp_4" });
    },
    expected: [
      { invariant: 10, runId: "run_2", stepId: "write", detail: /points at checkpoint cp_4, which completes no step/ },
      { invariant: 11, runId: "run_2", stepId: "write", detail: /step write of run run_2 completed, but its dependency search ended failed/ },
    ],
  },
  {
    name: "12: a step recorded after its run's cancel was accepted",
    corrupt: (s) => {
      s.checkpoints.push({ ...checkpoint("cp_6", 6, "cp_5", "step_completed", "run_2", null), completedStepId: "search" });
      Object.assign(s.thread, { stateVersion: 6, headCheckpointId: "cp_6" });
      Object.assign(st(s, "run_2", "search"), { status: "completed", checkpointId: "cp_6" });
    },
    expected: [{ invariant: 12, runId: "run_2", stepId: "search", detail: /run run_2 recorded step search at v6, after its cancel was accepted at v5/ }],
  },
  {
    name: "12: a step that did its own work points at another run's checkpoint",
    corrupt: (s) => {
      st(s, "run_2", "answer").reusedFromRunId = null;
    },
    expected: [{ invariant: 12, runId: "run_2", stepId: "answer", detail: /step answer of run run_2 points at checkpoint cp_3 of run run_1, not its own/ }],
  },
];

describe("checkThread on plans", () => {
  it("finds nothing in a clean plan", () => {
    expect(checkThread(planSnapshot())).toEqual([]);
  });

  it("accepts a dependent of a cancelled step that a Continue carried over", () => {
    const snapshot = planSnapshot();
    Object.assign(st(snapshot, "run_2", "write"), { status: "completed", startedAt: 1, checkpointId: "cp_3", reusedFromRunId: "run_1" });
    expect(checkThread(snapshot)).toEqual([]);
  });

  it.each(planCases)("finds $name", ({ corrupt, expected }) => {
    const snapshot = planSnapshot();
    corrupt(snapshot);
    expectViolations(snapshot, expected);
  });
});

/** The clean thread after run_2's turn was taken back (LangGraph's rollback): cp_6 takes back msg_3. */
function rolledBack(): ThreadSnapshot {
  const snapshot = cleanSnapshot();
  snapshot.checkpoints.push(checkpoint("cp_6", 6, "cp_5", "run_rolled_back", "run_2", "msg_3"));
  msg(snapshot, "msg_3").publicationStatus = "deleted";
  snapshot.thread.stateVersion = 6;
  snapshot.thread.headCheckpointId = "cp_6";
  return snapshot;
}

describe("checkThread: rollbacks (invariant 1)", () => {
  it("accepts a cancelled run's input taken back by its run_rolled_back checkpoint", () => {
    expect(checkThread(rolledBack())).toEqual([]);
  });

  it("accepts a failed run's input taken back, and a message published after the rollback", () => {
    const snapshot = rolledBack();
    Object.assign(rn(snapshot, "run_2"), { status: "failed", cancelStateVersion: null, cancelCheckpointId: null, cancelRequestedAt: null });
    snapshot.checkpoints[4]!.kind = "step_completed";
    snapshot.transitions = [...walk("run_1", "queued", "running", "completed"), ...walk("run_2", "queued", "running", "failed")];
    snapshot.checkpoints.push(checkpoint("cp_7", 7, "cp_6", "input_accepted", "run_3", "msg_5"));
    snapshot.messages.push(message("msg_5", 3, "user", "run_3", 7, "cp_7"));
    snapshot.runs.push({ ...run("run_3", "queued", "cp_6", "msg_5"), stateVersion: 7 });
    snapshot.transitions.push(...walk("run_3", "queued"));
    Object.assign(snapshot.thread, { stateVersion: 7, headCheckpointId: "cp_7", activeRunId: "run_3" });
    expect(checkThread(snapshot)).toEqual([]);
  });

  it("finds a run's input deleted without a rollback", () => {
    const snapshot = cleanSnapshot();
    msg(snapshot, "msg_3").publicationStatus = "deleted";
    expectViolations(snapshot, [{ invariant: 1, detail: /input msg_3 of run run_2 is deleted without a run_rolled_back checkpoint/ }]);
  });

  it("finds a rollback of a completed run, and of a message that is not the run's input", () => {
    const completed = rolledBack();
    Object.assign(completed.checkpoints[5]!, { runId: "run_1" });
    expectViolations(completed, [
      { invariant: 1, detail: /input msg_3 of run run_2 is deleted without a run_rolled_back/ },
      { invariant: 1, detail: /rolls back run run_1, which is completed/ },
      { invariant: 1, detail: /names message msg_3, not run run_1's input/ },
    ]);
  });

  it("finds a rollback after a later message, a second rollback, and an input still published", () => {
    const later = rolledBack();
    later.messages.push(message("msg_4", 3, "assistant", "run_2", 5, "cp_5"));
    later.checkpoints[4]!.messageId = "msg_4";
    expectViolations(later, [
      // msg_4 is what cp_5 publishes here: the cancel boundary allows it at the cancel's version.
      { invariant: 1, detail: /took back input msg_3 although message msg_4 \(v5\) came after it/ },
    ]);
    const twice = rolledBack();
    twice.checkpoints.push(checkpoint("cp_7", 7, "cp_6", "run_rolled_back", "run_2", "msg_3"));
    Object.assign(twice.thread, { stateVersion: 7, headCheckpointId: "cp_7" });
    expectViolations(twice, [{ invariant: 1, detail: /rolls back run run_2 a second time/ }]);
    const kept = rolledBack();
    msg(kept, "msg_3").publicationStatus = "published";
    expectViolations(kept, [{ invariant: 1, detail: /took back input msg_3, which is still published/ }]);
  });
});
