import { describe, expect, it } from "vitest";
import type { RunRecord } from "./records.js";
import { acceptedCancelOf, endingOf, leaseOf } from "./run-views.js";
import { RUN_STATUSES } from "./run-status.js";

const run = (changes: Partial<RunRecord>): RunRecord =>
  ({
    runId: "run_x",
    status: "running",
    stateVersion: 4,
    cancelRequestedAt: null,
    cancelReason: null,
    cancelStateVersion: null,
    cancelCheckpointId: null,
    publishedMessageId: null,
    failureReason: null,
    failureMessage: null,
    leaseOwner: null,
    leaseExpiresAt: null,
    ...changes,
  }) as RunRecord;

describe("run views", () => {
  it("an accepted cancel is all its fields or nothing", () => {
    expect(acceptedCancelOf(run({}))).toBeUndefined();
    const accepted = { cancelRequestedAt: 10, cancelReason: "user_requested", cancelStateVersion: 3, cancelCheckpointId: "cp_1" };
    expect(acceptedCancelOf(run({ status: "cancel_requested", ...accepted }))).toEqual({
      reason: "user_requested",
      requestedAt: 10,
      stateVersion: 3,
      checkpointId: "cp_1",
    });
    expect(acceptedCancelOf(run({ ...accepted, cancelCheckpointId: null }))).toBeUndefined();
  });

  it("an ending exactly for the terminal statuses", () => {
    const ended = RUN_STATUSES.filter((status) => endingOf(run({ status })) !== undefined);
    expect(ended).toEqual(["completed", "failed", "cancelled"]);
    expect(endingOf(run({ status: "completed", publishedMessageId: "msg_1" }))).toEqual({ status: "completed", stateVersion: 4, publishedMessageId: "msg_1" });
    expect(endingOf(run({ status: "failed", failureReason: "worker_lost", failureMessage: "lost" }))).toEqual({ status: "failed", reason: "worker_lost", message: "lost" });
    expect(endingOf(run({ status: "cancelled", cancelReason: "thread_terminated", cancelCheckpointId: "cp_2" }))).toEqual({
      status: "cancelled",
      reason: "thread_terminated",
      resumeCheckpointId: "cp_2",
    });
  });

  it("a lease is an owner and an expiry, or none", () => {
    expect(leaseOf(run({}))).toBeUndefined();
    expect(leaseOf(run({ leaseOwner: "wrk_1", leaseExpiresAt: 99 }))).toEqual({ owner: "wrk_1", expiresAt: 99 });
  });
});
