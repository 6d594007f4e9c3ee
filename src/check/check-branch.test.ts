/** `checkThread` on a branch: its own versions start past the fork point, and its lineage holds its parents. */
import { describe, expect, it } from "vitest";
import { emptyStats, type CheckpointRecord, type MessageRecord, type RunRecord, type RunStatus } from "../core/index.js";
import type { ThreadSnapshot } from "../store/index.js";
import { checkThread } from "./check-thread.js";

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

/** thr_a: v1 root, v2 input, v3 answer. thr_b forked at cp_a3: v4 fork_created, v5 input, v6 answer. */
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
    inheritedCheckpoints: [
      checkpoint("thr_a", "cp_a1", 1, null, "thread_created"),
      checkpoint("thr_a", "cp_a2", 2, "cp_a1", "input_accepted", "run_a", "msg_a1"),
      checkpoint("thr_a", "cp_a3", 3, "cp_a2", "message_published", "run_a", "msg_a2"),
    ],
    inheritedMessages: [message("thr_a", "msg_a1", 0, "user", "run_a", 2, "cp_a2"), message("thr_a", "msg_a2", 1, "assistant", "run_a", 3, "cp_a3")],
    checkpoints: [
      checkpoint("thr_b", "cp_b4", 4, "cp_a3", "fork_created"),
      checkpoint("thr_b", "cp_b5", 5, "cp_b4", "input_accepted", "run_b", "msg_b1"),
      checkpoint("thr_b", "cp_b6", 6, "cp_b5", "message_published", "run_b", "msg_b2"),
    ],
    messages: [message("thr_b", "msg_b1", 2, "user", "run_b", 5, "cp_b5"), message("thr_b", "msg_b2", 3, "assistant", "run_b", 6, "cp_b6")],
    runs: [run("run_b", "cp_b4", "msg_b1", 6)],
    transitions: walk("run_b", "queued", "running", "completed"),
    operations: [],
  };
}

const found = (snapshot: ThreadSnapshot) => checkThread(snapshot).map((violation) => [violation.invariant, violation.detail]);

describe("checkThread on a branch", () => {
  it("finds nothing wrong with a clean branch", () => {
    expect(checkThread(branch())).toEqual([]);
  });

  it("accepts a run that continues from an inherited checkpoint", () => {
    const snapshot = branch();
    snapshot.runs[0]!.baseCheckpointId = "cp_a2";
    expect(checkThread(snapshot)).toEqual([]);
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
    snapshot.inheritedCheckpoints = snapshot.inheritedCheckpoints!.slice(0, 2);
    snapshot.runs[0]!.baseCheckpointId = "cp_elsewhere";
    const invariants = found(snapshot);
    expect(invariants).toContainEqual([3, expect.stringContaining("continues from checkpoint cp_elsewhere")]);
    expect(invariants).toContainEqual([3, expect.stringContaining("forked from checkpoint cp_a3 (v3), which is not in its lineage")]);
    expect(invariants).toContainEqual([3, expect.stringContaining("checkpoint cp_b4 (v4) has missing parent cp_a3")]);
  });
});
