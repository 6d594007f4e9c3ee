import { describe, expect, it } from "vitest";
import { isStopPending, stopAfterRun, stopAnswered, stopPressed, stopUnanswered } from "./stop-state.js";
import type { CancelView } from "./wire-types.js";

const RUN = "run_a";
const reply = (status: CancelView["status"], fields: Partial<CancelView> = {}): CancelView => ({
  run_id: RUN,
  status,
  already_terminal: false,
  pending_creation: false,
  accepted_state_version: 3,
  resume_checkpoint_id: "cp_3",
  published_message_id: null,
  ...fields,
});

describe("a Stop's state", () => {
  it("is pending until the server answers for the run's end", () => {
    const pressed = stopPressed(RUN);
    expect(pressed).toEqual({ runId: RUN, status: "sending", failedAttempts: 0, failure: null, outcome: null });
    const unanswered = stopUnanswered(stopUnanswered(pressed, "down"), "still down");
    expect(unanswered).toMatchObject({ status: "unconfirmed", failedAttempts: 2, failure: "still down" });
    const accepted = stopAnswered(unanswered, reply("cancel_requested"));
    expect(accepted).toMatchObject({ status: "accepted", failure: null, outcome: null, failedAttempts: 2 });
    expect([pressed, unanswered, accepted].every(isStopPending)).toBe(true);
  });

  it.each([
    ["cancelled", "cancelled"],
    ["completed", "completed"],
    ["failed", "failed"],
  ] as const)("a reply %s confirms it with that outcome", (status, outcome) => {
    const confirmed = stopAnswered(stopPressed(RUN), reply(status, { already_terminal: status !== "cancelled" }));
    expect(confirmed).toMatchObject({ status: "confirmed", outcome });
    expect(isStopPending(confirmed)).toBe(false);
    // Confirmed is final: a late failure or reply changes nothing.
    expect(stopUnanswered(confirmed, "late")).toBe(confirmed);
    expect(stopAnswered(confirmed, reply("cancel_requested"))).toBe(confirmed);
  });

  it("is confirmed by the run's own end, and only by its own run's", () => {
    const pressed = stopUnanswered(stopPressed(RUN), "down");
    expect(stopAfterRun(pressed, { runId: RUN, status: "running" })).toBe(pressed);
    expect(stopAfterRun(pressed, { runId: "run_b", status: "completed" })).toBe(pressed);
    expect(stopAfterRun(pressed, { runId: RUN, status: "completed" })).toMatchObject({ status: "confirmed", outcome: "completed", failure: null });
    expect(stopAnswered(pressed, { ...reply("cancelled"), run_id: "run_b" })).toBe(pressed);
    expect(stopAfterRun(null, { runId: RUN, status: "cancelled" })).toBeNull();
  });
});
