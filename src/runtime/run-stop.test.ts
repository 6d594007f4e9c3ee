import { describe, expect, it } from "vitest";
import { CancelScope } from "./cancel-scope.js";
import { RunStop } from "./run-stop.js";

describe("RunStop", () => {
  it("abort then record: the first Stop aborts, settling waits for the record", async () => {
    const scope = CancelScope.root();
    const stop = new RunStop(scope);
    expect(stop.apply({ type: "stop_requested", reason: "user_requested" })).toBe(true);
    expect(scope.signal.aborted).toBe(true);
    let isDecided = false;
    const decided = stop.whenDecided().then(() => (isDecided = true));
    await Promise.resolve();
    expect(isDecided).toBe(false);
    expect(stop.apply({ type: "stop_requested", reason: "again" })).toBe(false);
    stop.apply({ type: "stop_recorded", reason: "user_requested" });
    await decided;
    expect(stop.state).toEqual({ kind: "recorded", reason: "user_requested" });
  });

  it("record then abort: a notice from the process that recorded it aborts the work", async () => {
    const scope = CancelScope.root();
    const stop = new RunStop(scope);
    expect(stop.apply({ type: "stop_recorded", reason: "thread_terminated" })).toBe(true);
    expect(scope.signal.aborted).toBe(true);
    await stop.whenDecided();
    expect(stop.apply({ type: "stop_recorded", reason: "thread_terminated" })).toBe(false);
  });

  it("a refused record leaves the stop unrecorded, and a drain aborts without a cancel reason", async () => {
    const refused = new RunStop(CancelScope.root());
    refused.apply({ type: "stop_requested", reason: "user_requested" });
    refused.apply({ type: "stop_not_recorded" });
    await refused.whenDecided();
    expect(refused.state.kind).toBe("unrecorded");

    const scope = CancelScope.root();
    const draining = new RunStop(scope);
    expect(draining.apply({ type: "drain" })).toBe(true);
    expect((scope.signal.reason as Error).message).toBe("shutdown");
    expect(draining.state.kind).toBe("draining");
  });
});
