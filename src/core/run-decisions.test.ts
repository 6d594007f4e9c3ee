/** The store's domain rules as tables: every status against every decision. */
import { describe, expect, it } from "vitest";
import type { RunRecord } from "./records.js";
import { canFinishRun, canMoveRun, canPublish, decideCancel, resumePolicyAfterCancel } from "./run-decisions.js";
import { RUN_STATUSES, type RunStatus } from "./run-status.js";

const runIn = (status: RunStatus, changes: Partial<RunRecord> = {}): RunRecord =>
  ({ runId: "run_x", status, attempt: 2, cancelCheckpointId: null, ...changes }) as RunRecord;

describe("decideCancel", () => {
  it.each<[RunStatus, string, string | undefined]>([
    ["queued", "cancel_now", "cancelled"],
    ["running", "request", "cancel_requested"],
    ["interrupted", "request", "cancel_requested"],
    ["cancel_requested", "already_requested", undefined],
    ["cancelling", "already_requested", undefined],
    ["completed", "already_terminal", undefined],
    ["failed", "already_terminal", undefined],
    ["cancelled", "already_terminal", undefined],
  ])("%s → %s", (status, kind, to) => {
    const decision = decideCancel(status);
    expect(decision.kind).toBe(kind);
    expect("to" in decision ? decision.to : undefined).toBe(to);
  });

  it("covers every status", () => {
    for (const status of RUN_STATUSES) expect(() => decideCancel(status)).not.toThrow();
  });
});

describe("resumePolicyAfterCancel", () => {
  it.each([
    [null, "regenerate_pending_step"],
    [{ stepId: "model-1", kind: "model" as const, inputHash: "h" }, "regenerate_pending_step"],
    [{ stepId: "model-1/call", kind: "tool" as const, inputHash: "h" }, "reuse_tool_result"],
  ])("%j → %s", (step, policy) => {
    expect(resumePolicyAfterCancel(step)).toBe(policy);
  });
});

/** The plain transitions a worker or recovery makes: everything else goes through a cancel or a finish. */
const MOVES: Readonly<Record<RunStatus, readonly RunStatus[]>> = {
  queued: ["running"],
  running: ["interrupted", "queued"],
  interrupted: ["running", "queued"],
  cancel_requested: ["cancelling"],
  cancelling: [],
  completed: [],
  failed: [],
  cancelled: [],
};

describe("canMoveRun", () => {
  for (const from of RUN_STATUSES) {
    for (const to of RUN_STATUSES) {
      const allowed = MOVES[from].includes(to);
      it(`${from} → ${to}: ${allowed ? "allowed" : "refused"}`, () => {
        expect(canMoveRun(runIn(from), [from], to)).toBe(allowed);
        // Only from where the caller thinks the run is, and only in the caller's attempt.
        expect(canMoveRun(runIn(from), [], to)).toBe(false);
        expect(canMoveRun(runIn(from), [from], to, 1)).toBe(false);
        expect(canMoveRun(runIn(from), [from], to, 2)).toBe(allowed);
      });
    }
  }
});

/** Where each ending may come from (DESIGN §3). */
const FINISHES: Readonly<Record<"completed" | "cancelled" | "failed", readonly RunStatus[]>> = {
  completed: ["running"],
  cancelled: ["queued", "cancel_requested", "cancelling"],
  failed: ["queued", "running", "interrupted", "cancel_requested", "cancelling"],
};

describe("canFinishRun", () => {
  for (const from of RUN_STATUSES) {
    for (const to of ["completed", "cancelled", "failed"] as const) {
      const allowed = FINISHES[to].includes(from);
      it(`${from} → ${to}: ${allowed ? "allowed" : "refused"}${to === "cancelled" ? " (with an accepted cancel)" : ""}`, () => {
        const accepted = runIn(from, { cancelCheckpointId: "cp_cancel" });
        expect(canFinishRun(accepted, [from], to)).toBe(allowed);
        expect(canFinishRun(accepted, [from], to, 1)).toBe(false);
        // Only a cancel the store accepted ends a run cancelled.
        if (to === "cancelled") expect(canFinishRun(runIn(from), [from], to)).toBe(false);
        else expect(canFinishRun(runIn(from), [from], to)).toBe(allowed);
      });
    }
  }
});

describe("canPublish", () => {
  for (const status of RUN_STATUSES) {
    it(`${status}: ${status === "running" ? "publishes" : "publishes nothing"}`, () => {
      expect(canPublish(runIn(status))).toBe(status === "running");
      expect(canPublish(runIn(status), 2)).toBe(status === "running");
      expect(canPublish(runIn(status), 1)).toBe(false);
    });
  }
});
