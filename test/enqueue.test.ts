/** multitask "enqueue": runs wait on a busy thread and start in order, one at a time, never mixing. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { startHarness, type Harness } from "./support/harness.js";
import { createHeldModel } from "./support/held-model.js";

describe("multitask enqueue", () => {
  const held = createHeldModel();
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ model: held.model });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  const enqueue = (threadId: string, content: string) =>
    h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content }, multitask: "enqueue" } });

  it("under load, enqueued runs start in order, one at a time, and the history never interleaves them", async () => {
    const threadId = await h.createThread();
    const first = await h.startRun(threadId, "hold: message 0");
    // Ten more arrive at once while the first one streams.
    const queued = await Promise.all(Array.from({ length: 10 }, (_, index) => enqueue(threadId, `message ${index + 1}`)));
    for (const response of queued) expect(response.status).toBe(201);
    const waiting = queued.map((response) => response.body);
    expect(waiting.every((run: any) => run.status === "queued")).toBe(true);
    // A waiting run's input is not history yet.
    const early = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    expect(early.filter((message: any) => message.role === "user")).toHaveLength(1);

    held.release();
    const runIds = [first.run_id, ...waiting.map((run: any) => run.run_id)];
    const finals = await Promise.all(runIds.map((runId) => h.events(runId)));
    for (const events of finals) expect(events.at(-1)!.type).toBe("run.completed");
    const startedAt = await Promise.all(runIds.map(async (runId) => (await h.api(`/v1/runs/${runId}`)).body));
    // Each started only after the one before it had ended.
    for (let index = 1; index < startedAt.length; index++) {
      expect(Date.parse(startedAt[index].started_at)).toBeGreaterThanOrEqual(Date.parse(startedAt[index - 1].ended_at));
    }
    const messages = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    const roles = messages.map((message: any) => message.role);
    expect(roles).toEqual(Array.from({ length: 11 }, () => ["user", "assistant"]).flat());
    // The order of admission is the order in which they were enqueued.
    const order = messages.filter((message: any) => message.role === "user").map((message: any) => message.run_id);
    const enqueuedOrder = [...startedAt].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at) || 0).map((run) => run.run_id);
    expect(order).toEqual(enqueuedOrder);
  });

  it("a waiting run that is cancelled never runs and leaves no trace in history", async () => {
    const threadId = await h.createThread();
    const first = await h.startRun(threadId, "hold: the long one");
    const second = (await enqueue(threadId, "the one I cancel")).body;
    const third = (await enqueue(threadId, "the one after")).body;
    const cancel = await h.api(`/v1/runs/${second.run_id}/cancel`, { method: "POST" });
    expect(cancel.body.status).toBe("cancelled");
    held.release();
    const cancelledEvents: RunEvent[] = await h.events(second.run_id, { after: 0 });
    expect(cancelledEvents.at(-1)!.type).toBe("run.cancelled");
    expect((await h.events(first.run_id)).at(-1)!.type).toBe("run.completed");
    expect((await h.events(third.run_id)).at(-1)!.type).toBe("run.completed");
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(history.messages.map((message: any) => message.content).filter((content: string) => content.startsWith("the one I"))).toEqual([]);
    expect(history.messages.map((message: any) => message.role)).toEqual(["user", "assistant", "user", "assistant"]);
    // It never started, so no response was interrupted.
    expect(history.markers).toEqual([]);
  });

  it("interrupt and enqueue together: the interrupting run goes first, the waiting ones keep their order after it", async () => {
    const threadId = await h.createThread();
    const first = await h.startRun(threadId, "hold: first");
    const waiting = (await enqueue(threadId, "waiting")).body;
    const interrupting = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { input: { role: "user", content: "urgent" }, multitask: "interrupt" },
    });
    // The interrupt cancelled the active run; the freed thread may admit the waiting one first.
    expect([201, 409]).toContain(interrupting.status);
    expect((await h.api(`/v1/runs/${first.run_id}`)).body.status).toBe("cancelled");
    await h.events(waiting.run_id);
    if (interrupting.status === 201) await h.events(interrupting.body.run_id);
    const users = (await h.api(`/v1/threads/${threadId}/history`)).body.messages.filter((message: any) => message.role === "user");
    expect(users[0].content).toBe("hold: first");
    expect(users.map((message: any) => message.content)).toContain("waiting");
  });
});
