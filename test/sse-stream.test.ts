import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { createDemoModel } from "../src/runtime/index.js";
import { readSseEvents } from "../src/stream/index.js";
import { createGatedModel, gatedWhenAskedTo } from "./support/client-session.js";
import { createFakeTime, type PendingTimer } from "./support/fake-timers.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";

/** The buffer TTL and the disconnect grace run on fake time: only `time.advance` ends them. */
const TTL_MS = 60_000;
const GRACE_MS = 7_000;
/** The disconnect grace timer (the heartbeat and sweep are intervals on the same fake time). */
const isGraceTimer = (timer: PendingTimer) => !timer.isInterval && timer.ms === GRACE_MS;

describe("the event stream", () => {
  let h: Harness;
  const time = createFakeTime();
  // An answer to a message starting with "gate" stops after a few words until the test releases it.
  const gated = createGatedModel();
  const demo = createDemoModel({ wordsPerSecond: 300, wordCount: 120 });
  const model = gatedWhenAskedTo(gated, demo);
  beforeAll(async () => {
    h = await startHarness({ model, heartbeatMs: 40, eventTtlMs: TTL_MS, disconnectGraceMs: GRACE_MS, timers: time.timers });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("reconnecting with Last-Event-ID mid-stream yields every event exactly once, gapless", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    const first = await h.events(run.run_id, { until: (event) => event.seq >= 10 });
    const rest = await h.events(run.run_id, { lastEventId: first.at(-1)!.seq });
    const all = [...first, ...rest];
    expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));
    expect(all.at(-1)!.type).toBe("run.completed");
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages[1].content).toBe(deltaText(all));
    // ?after= is the same as Last-Event-ID; a replay of a finished run ends after the terminal event.
    const replay = await h.events(run.run_id, { after: 5 });
    expect(replay.map((event) => event.seq)).toEqual(all.slice(5).map((event) => event.seq));
  });

  it("sends heartbeat comments while a run streams", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    const response = await fetch(`${h.url}/v1/runs/${run.run_id}/events`);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    let heartbeats = 0;
    const events: RunEvent[] = [];
    for await (const message of readSseEvents(response.body!, { onComment: () => heartbeats++ })) {
      events.push(JSON.parse(message.data) as RunEvent);
    }
    expect(events.at(-1)!.type).toBe("run.completed");
    expect(heartbeats).toBeGreaterThan(0);
  });

  it("answers 410 with the history address once the buffer expired", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    expect((await h.events(run.run_id)).at(-1)!.type).toBe("run.completed");
    // The terminal event set the buffer's TTL timer; the buffer is kept until it fires, not after.
    await time.advance(TTL_MS - 1);
    expect((await h.api(`/v1/runs/${run.run_id}/events`)).status).toBe(200);
    await time.advance(1);
    const response = await h.api(`/v1/runs/${run.run_id}/events`);
    expect(response.status).toBe(410);
    expect(response.body).toMatchObject({
      error: "stream_expired",
      history_url: `/v1/threads/${threadId}/history`,
      run_status: "completed",
    });
  });

  it("race 4: a client that drops its connection without cancelling sees the run's real status on return", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    const controller = new AbortController();
    const seen: RunEvent[] = [];
    await expect(
      (async () => {
        for await (const event of h.stream(run.run_id, { signal: controller.signal })) {
          seen.push(event);
          if (event.type === "message.delta") controller.abort();
        }
      })(),
    ).rejects.toThrow();
    expect(seen.some((event) => event.type === "message.delta")).toBe(true);
    const rest = await h.events(run.run_id, { lastEventId: seen.at(-1)!.seq });
    expect(rest.at(-1)!.type).toBe("run.completed");
    const status = await h.api(`/v1/runs/${run.run_id}`);
    expect(status.body.status).toBe("completed");
    expect(status.body.cancel_requested_at).toBeNull();
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages).toHaveLength(2);
  });

  it("on_disconnect: cancel stops a run once nobody has listened for the grace period", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "gate: cancel me when I leave", { on_disconnect: "cancel" });
    await h.events(run.run_id, { until: (event) => event.type === "message.delta" });
    // The server saw the disconnect once it armed the grace timer; the answer waits at its gate meanwhile.
    await time.whenScheduled(isGraceTimer);
    await time.advance(GRACE_MS - 1);
    expect((await h.api(`/v1/runs/${run.run_id}`)).body.status).toBe("running");
    await time.advance(1);
    // Nobody is listening now; watch the outcome in process, since a subscriber would keep it alive.
    const final = await h.tidemark.runtime.waitForTerminal("local", run.run_id, 5_000);
    expect(final).toMatchObject({ status: "cancelled", cancelReason: "client_disconnected" });
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages).toHaveLength(1);
  });

  it("on_disconnect: cancel keeps a run whose client reconnects inside the grace period", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "gate: keep me", { on_disconnect: "cancel" });
    const first = await h.events(run.run_id, { until: (event) => event.type === "message.delta" });
    await time.whenScheduled(isGraceTimer);
    const reconnected = h.stream(run.run_id, { after: first.at(-1)!.seq });
    // The first event of the new connection: the server attached it before sending anything.
    const rest = [(await reconnected.next()).value as RunEvent];
    await time.advance(GRACE_MS * 2);
    gated.release();
    for await (const event of reconnected) rest.push(event);
    expect(rest.at(-1)!.type).toBe("run.completed");
    expect([...first, ...rest].map((event) => event.seq)).toEqual([...first, ...rest].map((_, index) => index + 1));
  });
});
