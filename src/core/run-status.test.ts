/**
 * The run state machine as a table (DESIGN §3). The expected table is written out here, not
 * derived from the code, so a change to the machine has to change this file too.
 */
import { describe, expect, it } from "vitest";
import {
  canTransition,
  isCancellable,
  isCancelPending,
  isRunStatus,
  isTerminalStatus,
  nextStatuses,
  RUN_STATUSES,
  type RunStatus,
} from "./run-status.js";

/** Every allowed transition. Anything not listed must be refused. */
const EXPECTED: Record<RunStatus, readonly RunStatus[]> = {
  // DESIGN §3: started or stopped before start; extra: recovery fails an orphaned queued run.
  queued: ["running", "cancelled", "failed"],
  // DESIGN §3; extra: running → queued hands a recovered or drained run back for another attempt.
  running: ["completed", "interrupted", "failed", "cancel_requested", "queued"],
  // DESIGN §3: approval → running, or Stop; a wait that times out or loses its worker fails.
  interrupted: ["running", "cancel_requested", "failed", "queued"],
  // DESIGN §3 → cancelling; straight to cancelled when nothing uninterruptible is in flight;
  // extra: → failed when the worker was lost before it could confirm the stop.
  cancel_requested: ["cancelling", "cancelled", "failed"],
  // DESIGN §3 → cancelled; extra: → failed when the worker is lost mid-commit.
  cancelling: ["cancelled", "failed"],
  completed: [],
  failed: [],
  cancelled: [],
};

const TERMINAL: readonly RunStatus[] = ["completed", "failed", "cancelled"];

const pairs = RUN_STATUSES.flatMap((from) =>
  RUN_STATUSES.map((to) => ({ from, to, allowed: EXPECTED[from].includes(to) })),
);

describe("run status transitions", () => {
  it("knows exactly the eight statuses of DESIGN §3", () => {
    expect([...RUN_STATUSES].sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it.each(pairs)("$from → $to is allowed: $allowed", ({ from, to, allowed }) => {
    expect(canTransition(from, to)).toBe(allowed);
  });

  it("lists the same next statuses as the table", () => {
    for (const from of RUN_STATUSES) {
      expect([...nextStatuses(from)].sort()).toEqual([...EXPECTED[from]].sort());
    }
  });

  it.each(TERMINAL)("%s is sticky: no outgoing transition", (status) => {
    expect(nextStatuses(status)).toEqual([]);
    for (const to of RUN_STATUSES) expect(canTransition(status, to)).toBe(false);
  });

  it("never goes from a cancel back to running or completed", () => {
    for (const from of ["cancel_requested", "cancelling"] as const) {
      expect(canTransition(from, "running")).toBe(false);
      expect(canTransition(from, "completed")).toBe(false);
      expect(canTransition(from, "queued")).toBe(false);
    }
  });

  it("has no self-transitions", () => {
    for (const status of RUN_STATUSES) expect(canTransition(status, status)).toBe(false);
  });
});

describe("status predicates", () => {
  it.each(RUN_STATUSES)("%s: terminal, cancellable and cancel-pending are consistent", (status) => {
    expect(isTerminalStatus(status)).toBe(TERMINAL.includes(status));
    expect(isCancellable(status)).toBe(["queued", "running", "interrupted"].includes(status));
    expect(isCancelPending(status)).toBe(status === "cancel_requested" || status === "cancelling");
    // A status is at most one of: cancellable, cancel pending, terminal.
    const flags = [isTerminalStatus(status), isCancellable(status), isCancelPending(status)];
    expect(flags.filter(Boolean)).toHaveLength(1);
  });

  it("a cancellable status can reach cancel_requested or cancelled in one step", () => {
    for (const status of RUN_STATUSES.filter(isCancellable)) {
      expect(canTransition(status, "cancel_requested") || canTransition(status, "cancelled")).toBe(true);
    }
  });

  it("isRunStatus accepts the statuses and nothing else", () => {
    for (const status of RUN_STATUSES) expect(isRunStatus(status)).toBe(true);
    for (const value of ["", "done", "RUNNING", "cancel-requested", 1, null, undefined, {}]) {
      expect(isRunStatus(value)).toBe(false);
    }
  });
});
