import { describe, expect, it } from "vitest";
import { emptyStats, type OperationRecord, type ThreadRecord } from "../core/index.js";
import type { Store, ThreadSnapshot } from "../store/index.js";
import { checkStore, formatCheckReport } from "./check-store.js";

function thread(tenantId: string, threadId: string): ThreadRecord {
  return {
    tenantId,
    threadId,
    status: "active",
    stateVersion: 1,
    headCheckpointId: `cp_${threadId}`,
    activeRunId: null,
    title: null,
    metadata: {},
    stats: emptyStats(),
    forkedFrom: null,
    createdAt: 0,
    updatedAt: 0,
  };
}

function operation(tenantId: string, threadId: string, opId: string, idempotencyKey: string): OperationRecord {
  return {
    tenantId,
    opId,
    threadId,
    runId: `run_${opId}`,
    toolName: "send_quote",
    toolCallId: `call_${opId}`,
    idempotencyKey,
    phase: "committed",
    input: "{}",
    preview: null,
    result: null,
    error: null,
    commitAttempts: 1,
    createdAt: 0,
    updatedAt: 0,
  };
}

/** A thread with only its root checkpoint (clean for every per-thread invariant) and `operations`. */
function snapshot(tenantId: string, threadId: string, operations: OperationRecord[]): ThreadSnapshot {
  const root = {
    tenantId,
    checkpointId: `cp_${threadId}`,
    threadId,
    parentCheckpointId: null,
    stateVersion: 1,
    kind: "thread_created" as const,
    runId: null,
    messageId: null,
    completedStepId: null,
    pendingStep: null,
    resumePolicy: null,
    cancelledGeneration: null,
    createdAt: 0,
  };
  return { thread: thread(tenantId, threadId), messages: [], checkpoints: [root], runs: [], transitions: [], operations, steps: [] };
}

/** Only `scanThreads` is read by checkStore. */
function storeOf(snapshots: ThreadSnapshot[]): Store {
  return {
    async *scanThreads() {
      yield* snapshots;
    },
  } as Partial<Store> as Store;
}

describe("checkStore", () => {
  it("finds a key shared by two threads of one tenant (invariant 2), but not across tenants", async () => {
    const report = await checkStore(
      storeOf([
        snapshot("ten_a", "thr_1", [operation("ten_a", "thr_1", "op_1", "quote:1:send")]),
        snapshot("ten_b", "thr_2", [operation("ten_b", "thr_2", "op_2", "quote:1:send")]),
        snapshot("ten_a", "thr_3", [operation("ten_a", "thr_3", "op_3", "quote:1:send")]),
      ]),
    );
    expect(report.violations).toEqual([
      {
        invariant: 2,
        tenantId: "ten_a",
        threadId: "thr_3",
        runId: "run_op_3",
        operationId: "op_3",
        detail: "operations op_1 (thread thr_1) and op_3 share the idempotency key quote:1:send",
      },
    ]);
    expect(report.notApplicable).toEqual([]);
  });

  it("prints no not-applicable line when every invariant was checked", async () => {
    const report = await checkStore(storeOf([snapshot("ten_a", "thr_1", [])]));
    expect(formatCheckReport(report)).toBe("0 violations in 1 thread (0 runs, 0 messages)");
  });
});
