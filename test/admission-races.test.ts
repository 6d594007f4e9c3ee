/**
 * Run admission racing the things that end it, on both stores over HTTP, each checked as an
 * invariant: TERMINATE racing an enqueued create leaves no run alive on the deleted thread; a
 * Stop pressed before an enqueued create's reply still stops it; the same create sent twice at
 * once (one Idempotency-Key, or one run_id) is one run, also when it interrupts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createId, type RunEvent } from "../src/core/index.js";
import { startHarness, type Harness, type HarnessStore } from "./support/harness.js";
import { createHeldModel } from "./support/held-model.js";

const STORES: HarnessStore[] = ["sqlite", "postgres"];
const TERMINAL_EVENTS = new Set(["run.completed", "run.cancelled", "run.failed"]);

describe.each(STORES)("admission races (%s)", (storeKind) => {
  const held = createHeldModel();
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ model: held.model, storeKind });
  });
  afterAll(async () => {
    held.release();
    await h.expectNoViolations();
    await h.close();
  });

  const createRun = (threadId: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: body, headers });

  /** The run's whole event stream: it must end with a terminal event. */
  async function expectStreamEnds(runId: string): Promise<RunEvent[]> {
    const events = await h.events(runId);
    expect(TERMINAL_EVENTS.has(events.at(-1)?.type ?? ""), `${runId}: ${events.map((event) => event.type).join(",")}`).toBe(true);
    return events;
  }

  it("TERMINATE racing an enqueued create: the create is refused or its run is cancelled with the thread", async () => {
    const threadIds: string[] = [];
    for (let attempt = 0; attempt < 20; attempt++) {
      const threadId = await h.createThread();
      threadIds.push(threadId);
      const active = await h.startRun(threadId, "hold: the active answer");
      const runId = createId("run");
      if (attempt % 2 === 1) await held.whenHeld();

      const [deleted, created] = await Promise.all([
        h.api(`/v1/threads/${threadId}`, { method: "DELETE" }),
        createRun(threadId, { input: { role: "user", content: `waiting ${attempt}` }, multitask: "enqueue", run_id: runId }),
      ]);

      expect(deleted.status).toBe(200);
      expect([201, 404], JSON.stringify(created.body)).toContain(created.status);
      // Every run the thread had is stopped with it; none stays queued on a deleted thread.
      const runIds = created.status === 201 ? [active.run_id, runId] : [active.run_id];
      for (const id of runIds) {
        const events = await expectStreamEnds(id);
        expect(events.at(-1)?.type).toBe("run.cancelled");
        expect(events.some((event) => event.type === "message.published")).toBe(false);
      }
      if (created.status === 201) expect(deleted.body.cancelled_run_ids).toEqual(expect.arrayContaining(runIds));
      else expect(created.body.error).toBe("thread_not_found");
      expect((await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "late" } } })).status).toBe(404);
    }
    // No run of a deleted thread is left non-terminal.
    for (const threadId of threadIds) expect(await h.tidemark.store.listActiveRuns("local", threadId)).toEqual([]);
  });

  it("a Stop pressed before an enqueued create's reply ends the waiting run: it never runs or publishes", async () => {
    const threadId = await h.createThread();
    const active = await h.startRun(threadId, "hold: keeps the thread busy");
    await held.whenHeld();
    const runId = createId("run");

    const early = await h.api(`/v1/runs/${runId}/cancel`, { method: "POST", json: { reason: "user_pressed_stop" } });
    const created = await createRun(threadId, { input: { role: "user", content: "never runs" }, multitask: "enqueue", run_id: runId });
    held.release();

    expect(early.body).toMatchObject({ run_id: runId, pending_creation: true });
    expect(created.status).toBe(201);
    expect(created.body.status).toBe("cancelled");
    const events = await expectStreamEnds(runId);
    expect(events.at(-1)).toMatchObject({ type: "run.cancelled", reason: "user_pressed_stop" });
    expect((await expectStreamEnds(active.run_id)).at(-1)?.type).toBe("run.completed");
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(history.messages.some((message: any) => message.run_id === runId)).toBe(false);
    expect((await h.api(`/v1/runs/${runId}`)).body).toMatchObject({ status: "cancelled", published_message_id: null });
  });

  it.each([
    ["one Idempotency-Key", (key: string) => ({ body: {}, headers: { "idempotency-key": key } })],
    ["one run_id", (key: string) => ({ body: { run_id: key }, headers: {} })],
  ])("the same create sent twice at once (%s) is one run, on an idle and on a busy thread", async (_name, naming) => {
    for (let attempt = 0; attempt < 5; attempt++) {
      for (const multitask of ["reject", "enqueue", "interrupt"] as const) {
        const threadId = await h.createThread();
        const busy = multitask === "reject" ? undefined : await h.startRun(threadId, "hold: busy");
        // Released below only once it is really waiting, so the release cannot come before it.
        if (busy) await held.whenHeld();
        const { body, headers } = naming(createId("run"));
        const request = { input: { role: "user", content: `the same ${attempt}` }, multitask, ...body };

        const replies = await Promise.all([createRun(threadId, request, headers), createRun(threadId, request, headers)]);

        const statuses = replies.map((reply) => reply.status).sort();
        expect(statuses, JSON.stringify(replies.map((reply) => reply.body))).toEqual([200, 201]);
        expect(replies[0]!.body.run_id).toBe(replies[1]!.body.run_id);
        held.release();
        await expectStreamEnds(replies[0]!.body.run_id);
        if (busy) await expectStreamEnds(busy.run_id);
        const inputs = (await h.api(`/v1/threads/${threadId}/history`)).body.messages.filter((message: any) => message.content === `the same ${attempt}`);
        expect(inputs).toHaveLength(1);
      }
    }
  });

  it("interrupting creates sent at once on a busy thread all start; the last one is the thread's active run", async () => {
    const threadId = await h.createThread();
    const busy = await h.startRun(threadId, "hold: interrupted");
    await held.whenHeld();

    const replies = await Promise.all(
      Array.from({ length: 3 }, (_, index) => createRun(threadId, { input: { role: "user", content: `hold: interrupter ${index}` }, multitask: "interrupt" })),
    );

    for (const reply of replies) expect(reply.status, JSON.stringify(reply.body)).toBe(201);
    // The run that was not interrupted waits for its answer: release it once it does.
    await held.whenHeld();
    held.release();
    const finals = await Promise.all([busy.run_id, ...replies.map((reply) => reply.body.run_id)].map(expectStreamEnds));
    expect(finals[0]!.at(-1)?.type).toBe("run.cancelled");
    // Each interrupter but the last was interrupted in turn by the next one.
    expect(finals.slice(1).filter((events) => events.at(-1)?.type === "run.completed").length).toBeGreaterThanOrEqual(1);
  });
});
