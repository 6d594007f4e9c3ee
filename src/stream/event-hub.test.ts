/** The per-run buffers of one process: one per attempt, kept a TTL after the end, per tenant. */
import { describe, expect, it } from "vitest";
import type { RunEventDraft } from "../core/index.js";
import { createFakeTime } from "../../test/support/fake-timers.js";
import { ATTEMPT_SEQ_STRIDE, EventHub } from "./event-hub.js";

const completed = (runId: string): RunEventDraft => ({
  type: "run.completed",
  run_id: runId,
  state_version: 2,
  published_message_id: null,
});

describe("EventHub.ensure", () => {
  it("returns the same buffer for the same attempt", () => {
    const hub = new EventHub();
    const buffer = hub.ensure("t1", "run_a", 1);

    expect(hub.ensure("t1", "run_a", 1)).toBe(buffer);
    expect(hub.get("t1", "run_a")).toBe(buffer);
    expect(buffer.firstSeq).toBe(1);
    expect(hub.size).toBe(1);
  });

  it("starts attempt 2 at ATTEMPT_SEQ_STRIDE + 1 and replaces attempt 1's buffer", () => {
    const hub = new EventHub();
    const first = hub.ensure("t1", "run_a", 1);
    first.append({ type: "message.delta", run_id: "run_a", message_id: "msg_1", text: "seen" });

    const second = hub.ensure("t1", "run_a", 2);

    expect(second).not.toBe(first);
    expect(second.firstSeq).toBe(ATTEMPT_SEQ_STRIDE + 1);
    expect(second.isEmpty).toBe(true);
    expect(hub.get("t1", "run_a")).toBe(second);
    expect(hub.size).toBe(1);
    // Every seq of the new attempt is above any seq a client saw from the old one.
    expect(second.append(completed("run_a")).seq).toBeGreaterThan(first.lastSeq);
    expect(hub.ensure("t1", "run_a", 3).firstSeq).toBe(2 * ATTEMPT_SEQ_STRIDE + 1);
  });

  it("names the next attempt's buffer as the earlier one's successor, and wakes its subscribers", () => {
    const hub = new EventHub();
    const first = hub.ensure("t1", "run_a", 1);
    let wakeUps = 0;
    first.subscribe(() => wakeUps++);
    const second = hub.ensure("t1", "run_a", 2);
    expect(first.successor).toBe(second);
    expect(wakeUps).toBe(1);
  });

  it("never lets a stale attempt's writer replace the newer attempt's buffer", () => {
    const hub = new EventHub();
    const second = hub.ensure("t1", "run_a", 2);
    const stale = hub.ensure("t1", "run_a", 1);
    expect(stale).not.toBe(second);
    expect(hub.get("t1", "run_a")).toBe(second);
    expect(second.successor).toBeUndefined();
  });
});

describe("EventHub expiry", () => {
  it("keeps a buffer while the run is live and for the TTL after its terminal event", async () => {
    const time = createFakeTime();
    const hub = new EventHub({ ttlMs: 60_000, timers: time.timers });
    const buffer = hub.ensure("t1", "run_a", 1);

    await time.advance(10 * 60_000);
    expect(hub.get("t1", "run_a")).toBe(buffer);
    expect(time.pending()).toEqual([]);

    buffer.append(completed("run_a"));
    await time.whenScheduled((timer) => timer.ms === 60_000);
    await time.advance(59_999);
    expect(hub.get("t1", "run_a")).toBe(buffer);

    await time.advance(1);
    expect(hub.get("t1", "run_a")).toBeUndefined();
    expect(hub.size).toBe(0);
    expect(time.pending()).toEqual([]);
  });

  it("starts the TTL as the terminal event is appended, and none before", () => {
    const time = createFakeTime();
    const hub = new EventHub({ ttlMs: 60_000, timers: time.timers });
    const buffer = hub.ensure("t1", "run_a", 1);
    buffer.append({ type: "message.delta", run_id: "run_a", message_id: "msg_1", text: "hi" });
    expect(time.pending()).toEqual([]);

    buffer.append(completed("run_a"));

    expect(time.pending()).toEqual([expect.objectContaining({ ms: 60_000, isInterval: false })]);
  });

  it("never expires a newer attempt's buffer when a stale attempt's buffer ends", async () => {
    const time = createFakeTime();
    const hub = new EventHub({ ttlMs: 1_000, timers: time.timers });
    const second = hub.ensure("t1", "run_a", 2);
    hub.ensure("t1", "run_a", 1).append(completed("run_a"));

    await time.advance(5_000);

    expect(hub.get("t1", "run_a")).toBe(second);
  });

  it("defaults to a 15 minute TTL", async () => {
    const time = createFakeTime();
    const hub = new EventHub({ timers: time.timers });
    hub.ensure("t1", "run_a", 1).append(completed("run_a"));
    await time.whenScheduled();

    await time.advance(15 * 60_000 - 1);
    expect(hub.get("t1", "run_a")).toBeDefined();
    await time.advance(1);
    expect(hub.get("t1", "run_a")).toBeUndefined();
  });

  it("does not let an old attempt's expiry drop the newer attempt's buffer", async () => {
    const time = createFakeTime();
    const hub = new EventHub({ ttlMs: 1_000, timers: time.timers });
    hub.ensure("t1", "run_a", 1).append(completed("run_a"));
    await time.whenScheduled();
    const second = hub.ensure("t1", "run_a", 2);

    await time.advance(5_000);

    expect(time.pending()).toEqual([]);
    expect(hub.get("t1", "run_a")).toBe(second);
  });

  it("clear drops every buffer and pending timer", async () => {
    const time = createFakeTime();
    const hub = new EventHub({ ttlMs: 1_000, timers: time.timers });
    hub.ensure("t1", "run_a", 1).append(completed("run_a"));
    hub.ensure("t1", "run_b", 1);
    await time.whenScheduled();

    hub.clear();

    expect(hub.size).toBe(0);
    expect(time.pending()).toEqual([]);
  });
});

describe("EventHub tenants", () => {
  it("keeps the same run id of two tenants apart", () => {
    const hub = new EventHub();
    const ours = hub.ensure("tenant_a", "run_same", 1);
    const theirs = hub.ensure("tenant_b", "run_same", 1);
    ours.append({ type: "message.delta", run_id: "run_same", message_id: "msg_1", text: "private" });

    expect(theirs).not.toBe(ours);
    expect(theirs.isEmpty).toBe(true);
    expect(hub.get("tenant_a", "run_same")).toBe(ours);
    expect(hub.get("tenant_b", "run_same")).toBe(theirs);
    expect(hub.get("tenant_c", "run_same")).toBeUndefined();
    expect(hub.size).toBe(2);
  });

  it("cannot be confused by ids that concatenate alike", () => {
    const hub = new EventHub();
    const first = hub.ensure("ab", "c", 1);

    expect(hub.get("a", "bc")).toBeUndefined();
    expect(hub.ensure("a", "bc", 1)).not.toBe(first);
  });
});
