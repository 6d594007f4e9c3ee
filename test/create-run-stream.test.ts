import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { createDemoModel } from "../src/runtime/index.js";
import { readSseEvents } from "../src/stream/index.js";
import { createGatedModel, gatedWhenAskedTo } from "./support/client-session.js";
import { createFakeTime, type PendingTimer } from "./support/fake-timers.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";

/** The disconnect grace runs on fake time: only `time.advance` ends it. */
const GRACE_MS = 7_000;
const isGraceTimer = (timer: PendingTimer) => !timer.isInterval && timer.ms === GRACE_MS;

/**
 * `POST /v1/threads/{id}/runs` with `Accept: text/event-stream`: the reply is the run's events,
 * so one exchange goes from the prompt to its stream (DESIGN §8, an addition to the JSON reply).
 */
describe("a run created and streamed in one exchange", () => {
  let h: Harness;
  const time = createFakeTime();
  // An answer to a message starting with "gate" stops after a few words until the test releases it.
  const gated = createGatedModel();
  const demo = createDemoModel({ wordsPerSecond: 0, wordCount: 30 });
  const model = gatedWhenAskedTo(gated, demo);
  beforeAll(async () => {
    h = await startHarness({ model, disconnectGraceMs: GRACE_MS, timers: time.timers });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  /** Creates a run asking for its events; the run id is read from `Location`, before any event. */
  const createStreaming = (threadId: string, content: string, extra: Record<string, unknown> = {}, init: RequestInit = {}) =>
    postStreaming(`/v1/threads/${threadId}/runs`, content, extra, init);
  /** `POST /v1/runs`: the same, in a thread created with the run. */
  const createInNewThread = (content: string, extra: Record<string, unknown> = {}, init: RequestInit = {}) => postStreaming("/v1/runs", content, extra, init);
  const postStreaming = async (path: string, content: string, extra: Record<string, unknown>, init: RequestInit) => {
    const response = await fetch(`${h.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", ...init.headers },
      body: JSON.stringify({ input: { role: "user", content }, ...extra }),
      signal: init.signal,
    });
    const location = response.headers.get("location") ?? "";
    const runId = /^\/v1\/runs\/(run_[a-z0-9]+)\/events$/.exec(location)?.[1];
    async function* events(): AsyncGenerator<RunEvent> {
      for await (const message of readSseEvents(response.body!, { signal: init.signal ?? undefined })) {
        const event = JSON.parse(message.data) as RunEvent;
        if (String(event.seq) !== message.id || event.type !== message.event) throw new Error("SSE id/event do not match data");
        yield event;
      }
    }
    return { response, runId, events };
  };
  const collect = async (events: AsyncIterable<RunEvent>, until?: (event: RunEvent) => boolean) => {
    const seen: RunEvent[] = [];
    for await (const event of events) {
      seen.push(event);
      if (until?.(event)) break;
    }
    return seen;
  };

  it("answers 201 with the run's whole stream, the same events a GET of its address replays", async () => {
    const threadId = await h.createThread();
    const created = await createStreaming(threadId, "Tell me about tides");
    expect(created.response.status).toBe(201);
    expect(created.response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(created.runId).toBeDefined();
    const events = await collect(created.events());
    expect(events[0]).toMatchObject({ type: "run.started", seq: 1, run_id: created.runId });
    expect(events.at(-1)!.type).toBe("run.completed");
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(await h.events(created.runId!, { after: 0 })).toEqual(events);
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(["user", "assistant"]);
    expect(history.body.messages[1].content).toBe(deltaText(events));
  });

  it("a Stop sent with the run id from Location, before any event was read, ends the stream with run.cancelled and publishes nothing", async () => {
    const threadId = await h.createThread();
    const created = await createStreaming(threadId, "gate: stop me before I am read");
    const cancel = await h.api(`/v1/runs/${created.runId}/cancel`, { method: "POST", json: { reason: "user_pressed_stop" } });
    expect(cancel.status).toBe(202);
    const events = await collect(created.events());
    const types = events.map((event) => event.type);
    expect(types[0]).toBe("run.started");
    expect(types.at(-1)).toBe("run.cancelled");
    expect(types.slice(types.indexOf("run.cancel_requested"))).not.toContain("message.delta");
    expect(types).not.toContain("message.published");
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(["user"]);
    expect(history.body.state_version).toBe(cancel.body.accepted_state_version);
  });

  it("a repeated create (same run_id) answers 200 with the same run's events from the first, and starts nothing", async () => {
    const threadId = await h.createThread();
    const runId = "run_01jd8x0f1ae2rbv7c9ks0d8m5q";
    const first = await createStreaming(threadId, "Once", { run_id: runId });
    const firstEvents = await collect(first.events());
    expect([first.response.status, first.runId]).toEqual([201, runId]);
    const again = await createStreaming(threadId, "Once", { run_id: runId });
    expect([again.response.status, again.runId]).toEqual([200, runId]);
    expect(await collect(again.events())).toEqual(firstEvents);
    // The JSON reply of a repeat is as before.
    const asJson = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "Once" }, run_id: runId } });
    expect(asJson.status).toBe(200);
    expect(asJson.body).toMatchObject({ run_id: runId, status: "completed" });
    const thread = await h.api(`/v1/threads/${threadId}`);
    expect(thread.body.stats.message_count).toBe(2);
  });

  it("a refused create answers its JSON error, and a client that accepts anything keeps the JSON reply", async () => {
    const threadId = await h.createThread();
    const busy = await createStreaming(threadId, "gate: keep the thread busy");
    const refused = await createStreaming(threadId, "Me too");
    expect(refused.response.status).toBe(409);
    expect(refused.response.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await refused.response.json()).toMatchObject({ error: "run_in_progress", active_run_id: busy.runId });
    const unknown = await createStreaming("thr_01jd8x0f1ae2rbv7c9ks0d8m5q", "Anyone?");
    expect(unknown.response.status).toBe(404);
    expect(await unknown.response.json()).toMatchObject({ error: "thread_not_found" });
    const invalid = await createStreaming(threadId, "", {});
    expect(invalid.response.status).toBe(400);
    expect((await invalid.response.json()).error).toEqual(expect.any(String));

    // Released once its answer has begun (the gate is the one of the moment the answer starts).
    await h.events(busy.runId!, { until: (event) => event.type === "message.delta" });
    gated.release();
    expect((await collect(busy.events())).at(-1)!.type).toBe("run.completed");
    const anything = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", headers: { accept: "*/*" }, json: { input: { role: "user", content: "Hi" } } });
    expect(anything.status).toBe(201);
    expect(anything.headers.get("location")).toBe(`/v1/runs/${anything.body.run_id}/events`);
    expect((await h.events(anything.body.run_id)).at(-1)!.type).toBe("run.completed");
  });

  it("a client that leaves mid-stream resumes at Location with Last-Event-ID, every event once (on_disconnect: continue)", async () => {
    const threadId = await h.createThread();
    const controller = new AbortController();
    const created = await createStreaming(threadId, "gate: I will be back", {}, { signal: controller.signal });
    const first = await collect(created.events(), (event) => event.type === "message.delta");
    controller.abort();
    gated.release();
    const rest = await h.events(created.runId!, { lastEventId: first.at(-1)!.seq });
    const all = [...first, ...rest];
    expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));
    expect(all.at(-1)!.type).toBe("run.completed");
  });

  it("on_disconnect: cancel stops the run once its creating client has been gone for the grace period", async () => {
    const threadId = await h.createThread();
    const controller = new AbortController();
    const created = await createStreaming(threadId, "gate: cancel me when I leave", { on_disconnect: "cancel" }, { signal: controller.signal });
    await collect(created.events(), (event) => event.type === "message.delta");
    controller.abort();
    await time.whenScheduled(isGraceTimer);
    await time.advance(GRACE_MS);
    const final = await h.tidemark.runtime.waitForTerminal("local", created.runId!, 5_000);
    expect(final).toMatchObject({ status: "cancelled", cancelReason: "client_disconnected" });
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages).toHaveLength(1);
  });

  describe("POST /v1/runs: a run in a new thread", () => {
    it("creates the thread, its first message and the run at once, and streams the run", async () => {
      const created = await createInNewThread("A new conversation", { thread: { title: "Chosen", metadata: { from: "test" } } });
      expect(created.response.status).toBe(201);
      const events = await collect(created.events());
      expect(events[0]).toMatchObject({ type: "run.started", run_id: created.runId });
      expect(events.at(-1)!.type).toBe("run.completed");
      const threadId = (events[0] as Extract<RunEvent, { type: "run.started" }>).thread_id;
      const thread = await h.api(`/v1/threads/${threadId}`);
      // The chosen title is kept (never replaced by the automatic one); the version counts the creation, the input and the answer.
      expect(thread.body).toMatchObject({ title: "Chosen", metadata: { from: "test" }, status: "idle", state_version: 3, stats: { message_count: 2 } });
      const history = await h.api(`/v1/threads/${threadId}/history`);
      expect(history.body.messages.map((message: { role: string; content: string }) => [message.role, message.role === "user" ? message.content : ""])).toEqual([
        ["user", "A new conversation"],
        ["assistant", ""],
      ]);
      expect(history.body.messages[1].content).toBe(deltaText(events));
    });

    it("answers JSON without Accept: text/event-stream: the run names its new thread, and the automatic title names the thread", async () => {
      const created = await h.api("/v1/runs", { method: "POST", json: { input: { role: "user", content: "Tides and moons" } } });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ run_id: expect.stringMatching(/^run_/), thread_id: expect.stringMatching(/^thr_/), state_version: 2 });
      expect(created.headers.get("location")).toBe(`/v1/runs/${created.body.run_id}/events`);
      expect((await h.events(created.body.run_id)).at(-1)!.type).toBe("run.completed");
      const thread = await h.api(`/v1/threads/${created.body.thread_id}`);
      expect(thread.body.title).toEqual(expect.any(String));
      expect(thread.body.title.length).toBeGreaterThan(0);
    });

    it("a repeat (same run_id or Idempotency-Key, same request) returns the first run in its thread and makes no second thread; another request with the key is refused", async () => {
      const runId = "run_01jd8x0f1ae2rbv7c9ks0d8m5r";
      const before = (await h.api("/v1/threads?limit=100")).body.threads.length;
      const first = await createInNewThread("Only once", { run_id: runId });
      const firstEvents = await collect(first.events());
      const again = await createInNewThread("Only once", { run_id: runId });
      expect([first.response.status, again.response.status]).toEqual([201, 200]);
      expect(await collect(again.events())).toEqual(firstEvents);
      const { one, others } = await createConcurrently(h, "new-thread-key", 8);
      const otherRequest = await h.api("/v1/runs", { method: "POST", json: { input: { role: "user", content: "Something else" } }, headers: { "idempotency-key": "new-thread-key" } });
      expect(otherRequest.status).toBe(409);
      expect(otherRequest.body).toMatchObject({ error: "idempotency_key_reused", run_id: one.run_id });
      // Naming the thread the first run made is another request too.
      const firstThreadId = (firstEvents[0] as Extract<RunEvent, { type: "run.started" }>).thread_id;
      const inItsThread = await h.api(`/v1/threads/${firstThreadId}/runs`, { method: "POST", json: { input: { role: "user", content: "Only once" }, run_id: runId } });
      expect(inItsThread.body).toMatchObject({ error: "idempotency_key_reused" });
      expect(others).toHaveLength(7);
      await h.events(one.run_id);
      expect((await h.api("/v1/threads?limit=100")).body.threads.length).toBe(before + 2);
    });

    it("a Stop pressed before the create arrived (a named run) stops the run as it lands, and nothing is published", async () => {
      const runId = "run_01jd8x0f1ae2rbv7c9ks0d8m5s";
      const early = await h.api(`/v1/runs/${runId}/cancel`, { method: "POST", json: { reason: "user_pressed_stop" } });
      expect(early.body).toMatchObject({ pending_creation: true });
      const created = await createInNewThread("gate: stopped before I existed", { run_id: runId });
      const events = await collect(created.events());
      expect(events.map((event) => event.type)).not.toContain("message.delta");
      expect(events.at(-1)).toMatchObject({ type: "run.cancelled", reason: "user_pressed_stop" });
      const run = await h.api(`/v1/runs/${runId}`);
      const history = await h.api(`/v1/threads/${run.body.thread_id}/history`);
      expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(["user"]);
    });

    it("a second tab reads the same events; TERMINATE of the new thread from it ends both streams with run.cancelled", async () => {
      const created = await createInNewThread("gate: watched from two tabs");
      // One reader of the create's reply throughout: leaving a `for await` would close it.
      const firstTab = created.events();
      const first: RunEvent[] = [];
      while (first.at(-1)?.type !== "message.delta") first.push((await firstTab.next()).value as RunEvent);
      const threadId = (first[0] as Extract<RunEvent, { type: "run.started" }>).thread_id;
      const secondTab = h.stream(created.runId!);
      const secondFirst = (await secondTab.next()).value as RunEvent;
      expect(secondFirst).toEqual(first[0]);
      expect((await h.api(`/v1/threads/${threadId}`, { method: "DELETE" })).status).toBe(200);
      const rest = await collect(firstTab);
      const secondRest = await collect(secondTab);
      expect(rest.at(-1)!.type).toBe("run.cancelled");
      expect([secondFirst, ...secondRest]).toEqual([...first, ...rest]);
      expect([...first, ...rest].map((event) => event.seq)).toEqual([...first, ...rest].map((_, index) => index + 1));
      expect((await h.api(`/v1/runs/${created.runId}`)).body.status).toBe("cancelled");
    });

    it("refuses what builds on an earlier state, an unknown field, a bad title or run id, with 400 and no thread made", async () => {
      const before = (await h.api("/v1/threads?limit=100")).body.threads.length;
      const input = { role: "user", content: "Hi" };
      for (const body of [
        { input, expected_state_version: 1 },
        { input, resume_from_checkpoint_id: "cp_01jd8x0f1ae2rbv7c9ks0d8m5q" },
        { input, multitask: "enqueue" },
        { input, thread: { title: "" } },
        { input, thread: { thread_id: "thr_01jd8x0f1ae2rbv7c9ks0d8m5q" } },
        { input, run_id: "not-a-run-id" },
        { input: { role: "assistant", content: "Hi" } },
        {},
        { input: { role: "user", content: "nul \u0000 here" }, thread: { metadata: { "a\u0000b": 1 } } },
        { input, thread: { metadata: deeplyNested(200) } },
        { input, config: "not an object" },
      ]) {
        const response = await h.api("/v1/runs", { method: "POST", json: body });
        expect(response.status, JSON.stringify(body)).toBe(400);
        expect(response.body.error, JSON.stringify(body)).toBe("invalid_request");
      }
      const unknownAgent = await h.api("/v1/runs", { method: "POST", json: { input, agent: "nobody" } });
      expect(unknownAgent.status).toBe(404);
      expect((await h.api("/v1/threads?limit=100")).body.threads.length).toBe(before);
    });
  });
});

/** `{a: {a: … }}`, `depth` levels deep. */
function deeplyNested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 0; level < depth; level++) value = { a: value };
  return value;
}

/**
 * `count` identical creates of a run in a new thread at once, with one Idempotency-Key: one is
 * created (201), every other returns it (200), in the same thread.
 */
async function createConcurrently(h: Harness, key: string, count: number) {
  const replies = await Promise.all(
    Array.from({ length: count }, () => h.api("/v1/runs", { method: "POST", json: { input: { role: "user", content: "Keyed" } }, headers: { "idempotency-key": key } })),
  );
  expect(replies.map((reply) => reply.status).sort()).toEqual([...Array<number>(count - 1).fill(200), 201]);
  const one = replies.find((reply) => reply.status === 201)!.body;
  const others = replies.filter((reply) => reply.status === 200).map((reply) => reply.body);
  for (const other of others) expect(other).toMatchObject({ run_id: one.run_id, thread_id: one.thread_id });
  return { one, others };
}

describe("POST /v1/runs on PostgreSQL: identical creates at once make one thread and one run", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ storeKind: "postgres", demo: { wordsPerSecond: 0, wordCount: 10 } });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("a race of eight: one 201, seven 200 with the same run, one new thread", async () => {
    const { one } = await createConcurrently(h, "pg-race", 8);
    expect((await h.events(one.run_id)).at(-1)!.type).toBe("run.completed");
    const threads = (await h.api("/v1/threads?limit=100")).body.threads as { thread_id: string }[];
    expect(threads.map((thread) => thread.thread_id)).toEqual([one.thread_id]);
  });
});

describe.each(["sqlite", "postgres"] as const)("POST /v1/runs refused by the tenant's limit (%s)", (storeKind) => {
  it("answers 429 too_many_runs and leaves no thread behind", async () => {
    const gated = createGatedModel();
    const h = await startHarness({ storeKind, model: gated.model, limits: { maxActiveRunsPerTenant: 1 } });
    try {
      const first = await h.api("/v1/runs", { method: "POST", json: { input: { role: "user", content: "The one allowed" } } });
      expect(first.status).toBe(201);
      const refused = await h.api("/v1/runs", { method: "POST", json: { input: { role: "user", content: "One too many" }, thread: { title: "Never" } } });
      expect(refused.status).toBe(429);
      expect(refused.body).toMatchObject({ error: "too_many_runs", queue: "active", limit: 1 });
      const threads = (await h.api("/v1/threads?limit=100")).body.threads as { thread_id: string }[];
      expect(threads.map((thread) => thread.thread_id)).toEqual([first.body.thread_id]);
      // Released once its answer has begun (the gate is the one of the moment the answer starts).
      await h.events(first.body.run_id, { until: (event) => event.type === "message.delta" });
      gated.release();
      expect((await h.events(first.body.run_id)).at(-1)!.type).toBe("run.completed");
      await h.expectNoViolations();
    } finally {
      await h.close();
    }
  });
});

