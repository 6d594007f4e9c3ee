/** The disconnect grace period on fake time: the test moves the clock, nothing waits for it. */
import { describe, expect, it } from "vitest";
import { createFakeTime } from "../../test/support/fake-timers.js";
import { DisconnectWatch } from "./disconnect-watch.js";

function watchOnFakeTime(graceMs = 5_000) {
  const time = createFakeTime();
  const expired: string[] = [];
  const watch = new DisconnectWatch(graceMs, (tenantId, runId) => expired.push(`${tenantId}/${runId}`), time.timers);
  return { time, expired, watch };
}

describe("DisconnectWatch", () => {
  it("expires a watched run nobody subscribed to once the grace period is over, not before", async () => {
    const { time, expired, watch } = watchOnFakeTime();
    watch.watch("t1", "run_a");

    await time.advance(4_999);
    expect(expired).toEqual([]);
    await time.advance(1);
    expect(expired).toEqual(["t1/run_a"]);
    expect(time.pending()).toEqual([]);
  });

  it("keeps a run while a subscriber is attached, however long", async () => {
    const { time, expired, watch } = watchOnFakeTime();
    watch.watch("t1", "run_a");
    const detach = watch.attach("t1", "run_a");

    await time.advance(60 * 60_000);
    expect(expired).toEqual([]);

    detach();
    await time.advance(4_999);
    expect(expired).toEqual([]);
    await time.advance(1);
    expect(expired).toEqual(["t1/run_a"]);
  });

  it("a reconnect inside the grace period restarts it from the next disconnect", async () => {
    const { time, expired, watch } = watchOnFakeTime();
    watch.watch("t1", "run_a");
    watch.attach("t1", "run_a")();
    await time.advance(4_000);
    const detach = watch.attach("t1", "run_a");
    await time.advance(4_000);
    detach();
    // Detaching twice is one disconnect.
    detach();
    await time.advance(4_999);
    expect(expired).toEqual([]);
    await time.advance(1);
    expect(expired).toEqual(["t1/run_a"]);
  });

  it("waits for the last of several subscribers", async () => {
    const { time, expired, watch } = watchOnFakeTime();
    watch.watch("t1", "run_a");
    const first = watch.attach("t1", "run_a");
    const second = watch.attach("t1", "run_a");
    first();
    await time.advance(10_000);
    expect(expired).toEqual([]);
    second();
    await time.advance(5_000);
    expect(expired).toEqual(["t1/run_a"]);
  });

  it("forget and clear stop the timers; an unwatched run is never expired", async () => {
    const { time, expired, watch } = watchOnFakeTime();
    watch.watch("t1", "run_a");
    watch.watch("t1", "run_b");
    watch.attach("t1", "run_c")();
    watch.forget("t1", "run_a");
    expect(time.pending()).toHaveLength(1);
    watch.clear();
    expect(time.pending()).toEqual([]);
    await time.advance(60_000);
    expect(expired).toEqual([]);
  });
});
