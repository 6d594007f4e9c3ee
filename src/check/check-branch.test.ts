/** `checkThread` on a branch: its own versions start past the fork point, and its lineage holds its parents. */
import { describe, expect, it } from "vitest";
import { emptyStats, type CheckpointRecord, type MessageRecord, type RunRecord, type RunStatus } from "../core/index.js";
import type { ThreadSnapshot } from "../store/index.js";
import { checkThread, type Violation } from "./check-thread.js";
import { LineageWalker } from "./lineage-walker.js";

const tenantId = "ten_a";

function checkpoint(threadId: string, id: string, version: number, parent: string | null, kind: CheckpointRecord["kind"], runId: string | null = null, messageId: string | null = null): CheckpointRecord {
  return {
    tenantId,
    checkpointId: id,
    threadId,
    parentCheckpointId: parent,
    stateVersion: version,
    kind,
    runId,
    messageId,
    completedStepId: null,
    pendingStep: null,
    resumePolicy: null,
    cancelledGeneration: null,
    createdAt: version,
  };
}

function message(threadId: string, id: string, position: number, role: MessageRecord["role"], runId: string, version: number, checkpointId: string): MessageRecord {
  return {
    tenantId,
    messageId: id,
    threadId,
    position,
    role,
    content: id,
    runId,
    stateVersion: version,
    checkpointId,
    publicationStatus: "published",
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    label: null,
    interrupted: false,
    format: "text",
    createdAt: version,
  };
}

function run(runId: string, base: string, inputMessageId: string, version: number): RunRecord {
  return {
    tenantId,
    runId,
    threadId: "thr_b",
    status: "completed",
    attempt: 1,
    baseCheckpointId: base,
    input: { role: "user", content: "hi" },
    inputMessageId,
    idempotencyKey: null,
    requestHash: "h",
    model: "demo",
    agent: "chat",
    config: null,
    instructions: null,
    metadata: {},
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    stateVersion: version,
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
    createdAt: version,
    startedAt: version,
    endedAt: version,
  };
}

const walk = (runId: string, ...statuses: RunStatus[]) =>
  statuses.map((to, index) => ({ tenantId, runId, ordinal: index + 1, from: index === 0 ? null : statuses[index - 1]!, to, at: index }));

/** thr_a: v1 root, v2 input, v3 answer (only what its branch inherits matters here). */
function parent(): ThreadSnapshot {
  return {
    thread: {
      tenantId,
      threadId: "thr_a",
      status: "active",
      stateVersion: 3,
      headCheckpointId: "cp_a3",
      activeRunId: null,
      title: null,
      metadata: {},
      stats: emptyStats(),
      forkedFrom: null,
      createdAt: 0,
      updatedAt: 3,
    },
    checkpoints: [
      checkpoint("thr_a", "cp_a1", 1, null, "thread_created"),
      checkpoint("thr_a", "cp_a2", 2, "cp_a1", "input_accepted", "run_a", "msg_a1"),
      checkpoint("thr_a", "cp_a3", 3, "cp_a2", "message_published", "run_a", "msg_a2"),
    ],
    messages: [message("thr_a", "msg_a1", 0, "user", "run_a", 2, "cp_a2"), message("thr_a", "msg_a2", 1, "assistant", "run_a", 3, "cp_a3")],
    runs: [],
    transitions: [],
    operations: [],
    steps: [],
  };
}

/** thr_b forked from thr_a at cp_a3: v4 fork_created, v5 input, v6 answer. */
function branch(): ThreadSnapshot {
  return {
    thread: {
      tenantId,
      threadId: "thr_b",
      status: "active",
      stateVersion: 6,
      headCheckpointId: "cp_b6",
      activeRunId: null,
      title: null,
      metadata: {},
      stats: emptyStats(),
      forkedFrom: { threadId: "thr_a", checkpointId: "cp_a3", stateVersion: 3 },
      createdAt: 0,
      updatedAt: 6,
    },
    checkpoints: [
      checkpoint("thr_b", "cp_b4", 4, "cp_a3", "fork_created"),
      checkpoint("thr_b", "cp_b5", 5, "cp_b4", "input_accepted", "run_b", "msg_b1"),
      checkpoint("thr_b", "cp_b6", 6, "cp_b5", "message_published", "run_b", "msg_b2"),
    ],
    messages: [message("thr_b", "msg_b1", 2, "user", "run_b", 5, "cp_b5"), message("thr_b", "msg_b2", 3, "assistant", "run_b", 6, "cp_b6")],
    runs: [run("run_b", "cp_b4", "msg_b1", 6)],
    transitions: walk("run_b", "queued", "running", "completed"),
    operations: [],
    steps: [],
  };
}

/** The branch's violations, with its lineage walked from its parent as `checkStore` walks it. */
function checkBranch(snapshot: ThreadSnapshot, from: ThreadSnapshot = parent()): Violation[] {
  const walker = new LineageWalker();
  walker.enter(from);
  return checkThread(snapshot, walker.enter(snapshot));
}

const found = (snapshot: ThreadSnapshot, from?: ThreadSnapshot) =>
  checkBranch(snapshot, from).map((violation) => [violation.invariant, violation.detail]);

describe("checkThread on a branch", () => {
  it("finds nothing wrong with a clean branch", () => {
    expect(checkBranch(branch())).toEqual([]);
  });

  it("accepts a run that continues from an inherited checkpoint", () => {
    const snapshot = branch();
    snapshot.runs[0]!.baseCheckpointId = "cp_a2";
    expect(checkBranch(snapshot)).toEqual([]);
  });

  it("reports a first checkpoint that does not descend from the fork checkpoint", () => {
    const snapshot = branch();
    snapshot.checkpoints[0]!.parentCheckpointId = "cp_a2";
    expect(found(snapshot)).toEqual([
      [5, expect.stringContaining("not fork_created from cp_a3")],
      [5, expect.stringContaining("has parent cp_a2 at v2, not v3")],
    ]);
  });

  it("reports own versions that overlap the prefix or leave a gap", () => {
    const snapshot = branch();
    snapshot.checkpoints[1]!.stateVersion = 3;
    snapshot.messages[0]!.stateVersion = 3;
    const invariants = found(snapshot);
    expect(invariants).toContainEqual([5, expect.stringContaining("has v3, outside the thread's 4..6")]);
    expect(invariants).toContainEqual([5, "no checkpoint holds v5 of 6"]);
  });

  it("reports a fork checkpoint missing from the lineage, and a run from outside it", () => {
    const snapshot = branch();
    const from = parent();
    from.checkpoints = from.checkpoints.slice(0, 2);
    snapshot.runs[0]!.baseCheckpointId = "cp_elsewhere";
    const invariants = found(snapshot, from);
    expect(invariants).toContainEqual([3, expect.stringContaining("continues from checkpoint cp_elsewhere")]);
    expect(invariants).toContainEqual([3, expect.stringContaining("forked from checkpoint cp_a3 (v3), which is not in its lineage")]);
    expect(invariants).toContainEqual([3, expect.stringContaining("checkpoint cp_b4 (v4) has missing parent cp_a3")]);
  });
});

/** A root thread `threadId` whose versions 1..n are the given checkpoints (after its root) and messages. */
function root(threadId: string, messages: MessageRecord[]): ThreadSnapshot {
  const checkpoints = [checkpoint(threadId, `cp_${threadId}1`, 1, null, "thread_created")];
  for (const message of messages) {
    checkpoints.push(checkpoint(threadId, message.checkpointId, message.stateVersion, checkpoints.at(-1)!.checkpointId, "message_published", null, message.messageId));
  }
  return { ...parent(), thread: { ...parent().thread, threadId, stateVersion: checkpoints.length, headCheckpointId: checkpoints.at(-1)!.checkpointId }, checkpoints, messages };
}

/** A branch of `from` at `version`, holding only its `fork_created` checkpoint (and `runs`). */
function forkOf(from: ThreadSnapshot, threadId: string, version: number, runs: RunRecord[] = []): ThreadSnapshot {
  const forkCheckpoint = from.checkpoints.find((candidate) => candidate.stateVersion === version)!;
  const own = checkpoint(threadId, `cp_${threadId}_fork`, version + 1, forkCheckpoint.checkpointId, "fork_created");
  return {
    ...branch(),
    thread: {
      ...branch().thread,
      threadId,
      stateVersion: version + 1,
      headCheckpointId: own.checkpointId,
      forkedFrom: { threadId: from.thread.threadId, checkpointId: forkCheckpoint.checkpointId, stateVersion: version },
    },
    checkpoints: [own],
    messages: [],
    runs: runs.map((each) => ({ ...each, threadId })),
    transitions: runs.flatMap((each) => walk(each.runId, "queued", "running", "completed")),
  };
}

const toolMessage = (threadId: string, position: number, role: "assistant" | "tool", toolCallId: string): MessageRecord => ({
  ...message(threadId, `msg_${threadId}${position}`, position, role, "run_t", position + 2, `cp_${threadId}${position + 2}`),
  ...(role === "assistant" ? { toolCalls: [{ toolCallId, toolName: "search", input: "{}" }] } : { toolCallId, toolName: "search" }),
});

/** Each thread's violations, walked in the given (scan) order. */
function walkAll(snapshots: ThreadSnapshot[]): Record<string, [number, string][]> {
  const walker = new LineageWalker();
  return Object.fromEntries(
    snapshots.map((snapshot) => [
      snapshot.thread.threadId,
      checkThread(snapshot, walker.enter(snapshot)).map((violation): [number, string] => [violation.invariant, violation.detail]),
    ]),
  );
}

describe("LineageWalker", () => {
  // thr_r: v2 result of call_1, v3 a call of call_1, v4 another result of call_1. Its own context
  // answers the call (the result at v4 comes after it); a branch forked at v3 sees only the early
  // result, so its context leaves the call without an outcome.
  const tree = () => {
    const top = root("thr_r", [toolMessage("thr_r", 0, "tool", "call_1"), toolMessage("thr_r", 1, "assistant", "call_1"), toolMessage("thr_r", 2, "tool", "call_1")]);
    const early = forkOf(top, "thr_e", 3, [run("run_e", "cp_thr_r4", "msg_x", 4)]);
    const late = forkOf(top, "thr_l", 4, [run("run_l", "cp_thr_r4", "msg_y", 5)]);
    return { top, early, late };
  };

  it("shows a branch its ancestors' rows only up to its fork point, whatever order its siblings come in", () => {
    const expected = {
      thr_r: [],
      thr_e: [
        [3, expect.stringContaining("run run_e continues from checkpoint cp_thr_r4, which is not in the thread's lineage")],
        [7, "tool call call_1 has no outcome in model context"],
      ],
      thr_l: [],
    };
    const { top, early, late } = tree();
    expect(walkAll([top, late, early])).toEqual(expected);
    expect(walkAll([top, early, late])).toEqual(expected);
  });

  it("walks a fork of a fork, and back up to a sibling of its parent", () => {
    const { top, early, late } = tree();
    const deeper = forkOf(late, "thr_d", 5, [run("run_d", "cp_thr_r2", "msg_z", 6)]);
    expect(walkAll([top, late, deeper, early])).toEqual({
      thr_r: [],
      thr_l: [],
      thr_d: [],
      thr_e: [[3, expect.stringContaining("run_e")], [7, expect.stringContaining("call_1")]],
    });
  });

  it("reports a branch whose parent never came as forked from outside its lineage, without failing", () => {
    const { early } = tree();
    expect(walkAll([early]).thr_e).toContainEqual([3, expect.stringContaining("forked from checkpoint cp_thr_r3 (v3), which is not in its lineage")]);
  });
});
