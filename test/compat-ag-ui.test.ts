/**
 * AG-UI at POST /ag-ui (issue 16, DESIGN §17), driven by the real `HttpAgent` of `@ag-ui/client`
 * 1.0.0, unchanged: its own verifier checks the order of every event the server sends. A Stop is
 * the client aborting its request; the server cancels the run and publishes nothing of the answer.
 */
import { HttpAgent, type AgentSubscriber, type BaseEvent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDemoModel } from "../src/runtime/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { createGatedModel, gatedWhenAskedTo } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";

const KEY = "ag-ui-test-key";
const TENANT = "tenant-ag-ui";
const OTHER_KEY = "ag-ui-other-key";

describe("AG-UI (HttpAgent) against Tidemark", () => {
  let h: Harness;
  // An answer to a message starting with "gate" stops after a few words until the test releases it.
  const gated = createGatedModel();
  const demo = createDemoModel({ wordsPerSecond: 300, wordCount: 30 });
  const model = gatedWhenAskedTo(gated, demo);
  let dir: string;
  let outbox: DemoOutbox;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-ag-ui-"));
    outbox = createDemoOutbox(join(dir, "outbox.db"), { sendDelayMs: 20 });
    h = await startHarness({
      model,
      apiKeys: new Map([
        [KEY, TENANT],
        [OTHER_KEY, "tenant-other"],
      ]),
      disconnectGraceMs: 50,
      tools: createDemoTools({ outbox, searchDelayMs: 20 }),
    });
  });
  afterEach(async () => {
    await h.expectNoViolations();
  });
  afterAll(async () => {
    gated.release();
    await h.close();
    outbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function createAgent(threadId: string = randomUUID()): HttpAgent {
    return new HttpAgent({ url: `${h.url}/ag-ui`, threadId, headers: { Authorization: `Bearer ${KEY}` } });
  }

  /** A subscriber that records every event (after the client verified it). */
  function recorder(extra: AgentSubscriber = {}): { events: BaseEvent[]; subscriber: AgentSubscriber } {
    const events: BaseEvent[] = [];
    return { events, subscriber: { ...extra, onEvent: ({ event }) => void events.push(event) } };
  }

  const metadataOf = (events: BaseEvent[]) => (events[0] as BaseEvent & { metadata: { tidemark_run_id: string; tidemark_thread_id: string } }).metadata;
  const history = async (threadId: string) => (await h.api(`/v1/threads/${threadId}/history`, { key: KEY })).body.messages as any[];

  it("a run completes with verified events, and the thread's history holds the answer", async () => {
    const agent = createAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: "Hello from AG-UI" });
    const { events, subscriber } = recorder();
    await agent.runAgent({}, subscriber);

    const types: string[] = events.map((event) => event.type);
    expect(types[0]).toBe("RUN_STARTED");
    expect(types.at(-1)).toBe("RUN_FINISHED");
    expect(types).toContain("TEXT_MESSAGE_START");
    expect(types.filter((type) => type === "TEXT_MESSAGE_CONTENT").length).toBeGreaterThan(1);
    expect(types.indexOf("TEXT_MESSAGE_END")).toBeLessThan(types.indexOf("RUN_FINISHED"));
    expect((events.at(-1) as any).outcome).toEqual({ type: "success" });

    const { tidemark_thread_id: threadId, tidemark_run_id: runId } = metadataOf(events);
    const messages = await history(threadId);
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(messages[0].content).toBe("Hello from AG-UI");
    const answer = agent.messages.at(-1)!;
    expect(answer.role).toBe("assistant");
    expect(messages[1].content).toBe(answer.content);
    expect(messages[1].run_id).toBe(runId);

    // The next run of the same AG-UI thread continues the same Tidemark thread.
    agent.addMessage({ id: randomUUID(), role: "user", content: "And a second question" });
    const second = recorder();
    await agent.runAgent({}, second.subscriber);
    expect(metadataOf(second.events).tidemark_thread_id).toBe(threadId);
    expect((await history(threadId)).map((message) => message.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("accepts a Tidemark thread id as the AG-UI thread id", async () => {
    const threadId = await h.createThread(KEY);
    const agent = createAgent(threadId);
    agent.addMessage({ id: randomUUID(), role: "user", content: "On a native thread" });
    const { events, subscriber } = recorder();
    await agent.runAgent({}, subscriber);
    expect(metadataOf(events).tidemark_thread_id).toBe(threadId);
    expect((await history(threadId)).map((message) => message.role)).toEqual(["user", "assistant"]);
  });

  it("Stop (the client aborts its request) cancels the run on the server, and nothing of the answer is published", async () => {
    const agent = createAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: "gate: a long answer" });
    const { events, subscriber } = recorder({ onTextMessageContentEvent: () => agent.abortRun() });
    await agent.runAgent({}, subscriber).catch(() => undefined);
    expect(events.some((event) => event.type === "TEXT_MESSAGE_CONTENT")).toBe(true);

    const { tidemark_thread_id: threadId, tidemark_run_id: runId } = metadataOf(events);
    const run = await h.tidemark.runtime.waitForTerminal(TENANT, runId, 20_000);
    expect(run?.status).toBe("cancelled");
    expect(run?.cancelReason).toBe("client_disconnected");
    // The answer held at the gate would finish now; it was discarded with the Stop.
    gated.release();
    const messages = await history(threadId);
    expect(messages.map((message) => message.role)).toEqual(["user"]);
  });

  it("the explicit cancel stops the run; the stream ends with the cancelled outcome", async () => {
    const agent = createAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: "gate: stop me explicitly" });
    let cancel: Promise<{ status: number; body: any }> | undefined;
    const { events, subscriber } = recorder({
      onTextMessageContentEvent: () => {
        cancel ??= h.api(`/ag-ui/runs/${metadataOf(events).tidemark_run_id}/cancel`, { method: "POST", key: KEY });
      },
    });
    await agent.runAgent({}, subscriber);
    const reply = await cancel!;
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ status: "cancelled", already_terminal: false });
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "cancelled" } });
    expect((await history(metadataOf(events).tidemark_thread_id)).map((message) => message.role)).toEqual(["user"]);
    // A second cancel is idempotent: the same terminal run.
    const again = await h.api(`/ag-ui/runs/${reply.body.run_id}/cancel`, { method: "POST", key: KEY });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: "cancelled", already_terminal: true });
    gated.release();
  });

  it("the explicit cancel also takes the AG-UI runId, of a thread's first run and of a later one", async () => {
    const agent = createAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: "A first question" });
    const first = recorder();
    await agent.runAgent({}, first.subscriber);
    expect(first.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const { tidemark_run_id: firstRunId, tidemark_thread_id: threadId } = metadataOf(first.events);
    const firstAgUiRunId = (first.events[0] as BaseEvent & { runId: string }).runId;
    // A finished run: either id answers it, unchanged (too late: it completed).
    const late = await h.api(`/ag-ui/runs/${encodeURIComponent(firstAgUiRunId)}/cancel`, { method: "POST", key: KEY });
    expect(late.status).toBe(200);
    expect(late.body).toMatchObject({ run_id: firstRunId, status: "completed", already_terminal: true });

    // A later run of the same AG-UI thread, stopped by the client's own runId (not a UUID here).
    const agUiRunId = `client-run-${randomUUID()}`;
    agent.addMessage({ id: randomUUID(), role: "user", content: "gate: stop me by my AG-UI id" });
    let cancel: Promise<{ status: number; body: any }> | undefined;
    const { events, subscriber } = recorder({
      onTextMessageContentEvent: () => {
        cancel ??= h.api(`/ag-ui/runs/${encodeURIComponent(agUiRunId)}/cancel`, { method: "POST", key: KEY });
      },
    });
    await agent.runAgent({ runId: agUiRunId }, subscriber);
    const reply = await cancel!;
    const runId = metadataOf(events).tidemark_run_id;
    expect(metadataOf(events).tidemark_thread_id).toBe(threadId);
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ run_id: runId, status: "cancelled", already_terminal: false });
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", runId: agUiRunId, outcome: { type: "cancelled" } });
    expect((await history(threadId)).map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    // Either id answers the same terminal run after.
    for (const id of [agUiRunId, runId]) {
      const again = await h.api(`/ag-ui/runs/${encodeURIComponent(id)}/cancel`, { method: "POST", key: KEY });
      expect({ status: again.status, run_id: again.body.run_id, status_of_run: again.body.status }).toEqual({ status: 200, run_id: runId, status_of_run: "cancelled" });
    }
    // Another tenant's AG-UI runId, an unknown one, and ids no request could carry: 404, nothing stopped.
    for (const [id, key] of [
      [agUiRunId, OTHER_KEY],
      [firstAgUiRunId, OTHER_KEY],
      [randomUUID(), KEY],
      ["a\u0000b", KEY],
      ["x".repeat(201), KEY],
      [" ", KEY],
    ] as const) {
      const reply = await h.api(`/ag-ui/runs/${encodeURIComponent(id)}/cancel`, { method: "POST", key });
      expect({ id: id.slice(0, 20), status: reply.status, error: reply.body.error }).toEqual({ id: id.slice(0, 20), status: 404, error: "run_not_found" });
    }
    gated.release();
  });

  it("a tool call goes out as TOOL_CALL_START/ARGS/END and its RESULT, before the answer", async () => {
    const agent = createAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: "search for red shoes" });
    const { events, subscriber } = recorder();
    await agent.runAgent({}, subscriber);
    const types: string[] = events.map((event) => event.type);
    const start = events.find((event) => event.type === "TOOL_CALL_START") as any;
    expect(start).toMatchObject({ toolCallName: "search_catalog" });
    expect(types.indexOf("TOOL_CALL_ARGS")).toBeGreaterThan(types.indexOf("TOOL_CALL_START"));
    expect(types.indexOf("TOOL_CALL_RESULT")).toBeGreaterThan(types.indexOf("TOOL_CALL_END"));
    expect(types.at(-1)).toBe("RUN_FINISHED");
    const result = events.find((event) => event.type === "TOOL_CALL_RESULT") as any;
    expect(result.toolCallId).toBe(start.toolCallId);
    const messages = await history(metadataOf(events).tidemark_thread_id);
    expect(messages.find((message) => message.role === "tool")?.content).toBe(result.content);
    // The client holds the call and its result as messages, as history does.
    expect(agent.messages.some((message) => message.role === "tool" && message.toolCallId === start.toolCallId)).toBe(true);
  });

  it("a consequential tool ends the AG-UI run with the interrupt outcome; resume approves it and the same run goes on", async () => {
    const agent = createAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: "email ada@example.com the report" });
    const { events, subscriber } = recorder();
    await agent.runAgent({}, subscriber);
    const finished = events.at(-1) as any;
    expect(finished).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt" } });
    const [interrupt] = finished.outcome.interrupts;
    expect(interrupt).toMatchObject({ reason: "tool_approval", metadata: { tool: "send_email" } });
    const start = events.find((event) => event.type === "TOOL_CALL_START") as any;
    expect(interrupt.toolCallId).toBe(start.toolCallId);
    const { tidemark_run_id: runId, tidemark_thread_id: threadId } = metadataOf(events);
    // The closed stream does not cancel a run waiting for an approval.
    expect((await h.api(`/v1/runs/${runId}`, { key: KEY })).body).toMatchObject({ status: "interrupted", active_operation: interrupt.id });

    const resumed = recorder();
    await agent.runAgent({ resume: [{ interruptId: interrupt.id, status: "resolved" }] }, resumed.subscriber);
    expect(metadataOf(resumed.events).tidemark_run_id).toBe(runId);
    expect(resumed.events.map((event) => event.type)).toContain("TOOL_CALL_RESULT");
    expect(resumed.events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    expect((await h.api(`/v1/runs/${runId}`, { key: KEY })).body.status).toBe("completed");
    expect(outbox.countByKey()[interrupt.metadata.idempotency_key]).toBe(1);
    expect((await history(threadId)).at(-1).content).toMatch(/handed to the outbox/);
  });

  it("a plan's steps go out as STATE_SNAPSHOT; parallel steps stream as concurrent messages", async () => {
    const agent = createAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: "Research the tides" });
    const { events, subscriber } = recorder();
    await agent.runAgent({ forwardedProps: { agent: "research", config: { subtasks: ["moon", "sun", "wind"], max_parallel: 2 } } }, subscriber);
    expect(events.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "success" } });
    const snapshots = events.filter((event) => event.type === "STATE_SNAPSHOT") as any[];
    expect(snapshots.length).toBeGreaterThan(0);
    const last = snapshots.at(-1).snapshot.tidemark.steps as any[];
    expect(last.length).toBeGreaterThanOrEqual(3);
    expect(last.every((step) => step.status === "completed")).toBe(true);
    expect(agent.state.tidemark.steps).toEqual(last);
  });

  it("a repeated request (same runId) streams the same run; another run on a busy thread is refused with 409", async () => {
    const body = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: "m1", role: "user", content: "gate: hold on" }] };
    const post = (json: unknown) =>
      fetch(`${h.url}/ag-ui`, { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body: JSON.stringify(json) });
    const first = await post(body);
    expect(first.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const runId = first.headers.get("x-tidemark-run-id")!;
    const again = await post(body);
    expect(again.headers.get("x-tidemark-run-id")).toBe(runId);
    const busy = await post({ ...body, runId: randomUUID(), messages: [{ id: "m2", role: "user", content: "another" }] });
    expect(busy.status).toBe(409);
    expect(await busy.json()).toMatchObject({ error: "run_in_progress", active_run_id: runId });
    // The answer is held at the gate once its first words are out: read up to them, then release it.
    const reader = first.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("TEXT_MESSAGE_CONTENT")) text += (await reader.read()).value ?? "";
    gated.release();
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) text += chunk.value;
    // Both streams end with the same run's success.
    for (const stream of [text, await again.text()]) {
      expect(stream.trim().split("\n\n").at(-1)).toMatch(/"type":"RUN_FINISHED".*"outcome":\{"type":"success"\}/);
    }
  });

  it("bad input gets a 4xx JSON error, never a 5xx", async () => {
    const valid = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: "m1", role: "user", content: "hi" }], tools: [], context: [] };
    const post = (json: unknown, init: { key?: string; body?: string; headers?: Record<string, string> } = {}) =>
      h.api("/ag-ui", { method: "POST", key: init.key ?? KEY, ...(init.body === undefined ? { json } : { body: init.body, headers: init.headers }) });

    const cases: [string, Promise<{ status: number; body: any }>, number, string][] = [
      ["no body fields", post({}), 400, "invalid_request"],
      ["no user message", post({ ...valid, messages: [{ id: "a1", role: "assistant", content: "hi" }] }), 400, "invalid_request"],
      ["an image part", post({ ...valid, messages: [{ id: "m1", role: "user", content: [{ type: "image", url: "x" }] }] }), 400, "invalid_request"],
      ["a NUL in the text", post({ ...valid, messages: [{ id: "m1", role: "user", content: "a\u0000b" }] }), 400, "invalid_request"],
      ["deep JSON", post({ ...valid, state: JSON.parse("[".repeat(500) + "]".repeat(500)) }), 400, "invalid_request"],
      ["not JSON", post(undefined, { body: "{nope", headers: { "content-type": "application/json" } }), 400, "invalid_json"],
      ["not application/json", post(undefined, { body: "hi", headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type"],
      ["a huge body", post({ ...valid, state: "x".repeat(2 * 1024 * 1024) }), 413, "payload_too_large"],
      ["an unknown Tidemark thread", post({ ...valid, threadId: "thr_01jd8x0f1ae2rbv7c9ks0d8m5q" }), 404, "thread_not_found"],
      ["an unknown agent", post({ ...valid, threadId: randomUUID(), forwardedProps: { agent: "nobody" } }), 404, "agent_not_found"],
      ["no API key", post(valid, { key: "wrong" }), 401, "unauthorized"],
    ];
    for (const [what, reply, status, code] of cases) {
      const { status: actual, body } = await reply;
      expect({ what, status: actual, error: body.error }).toEqual({ what, status, error: code });
    }
    expect((await h.api("/ag-ui/runs/run_01jd8x0f1ae2rbv7c9ks0d8m5q/cancel", { method: "POST", key: KEY })).status).toBe(404);
    // Another tenant's thread and run are 404 exactly like unknown ones, and nothing is started.
    const foreignThread = await h.createThread(KEY);
    const foreign = await post({ ...valid, threadId: foreignThread }, { key: OTHER_KEY });
    expect({ status: foreign.status, error: foreign.body.error }).toEqual({ status: 404, error: "thread_not_found" });
    const own = await h.api(`/v1/threads/${foreignThread}/runs`, { method: "POST", key: KEY, json: { input: { role: "user", content: "mine" } } });
    expect((await h.api(`/ag-ui/runs/${own.body.run_id}/cancel`, { method: "POST", key: OTHER_KEY })).status).toBe(404);
    expect((await h.tidemark.runtime.waitForTerminal(TENANT, own.body.run_id, 20_000))?.status).toBe("completed");
    expect((await h.api(`/ag-ui/runs/${"x".repeat(300)}/cancel`, { method: "POST", key: KEY })).status).toBe(404);

    // An AG-UI runId names one run of the tenant: reused for another request (here another thread), a 409.
    const reused = randomUUID();
    const ran = await post({ ...valid, threadId: randomUUID(), runId: reused });
    expect(ran.status).toBe(200);
    expect(String(ran.body)).toMatch(/"type":"RUN_FINISHED"/);
    const again = await post({ ...valid, threadId: randomUUID(), runId: reused });
    expect({ status: again.status, error: again.body.error }).toEqual({ status: 409, error: "idempotency_key_reused" });
    // Another tenant may use the same AG-UI runId: run ids are the tenant's own.
    const theirs = await post({ ...valid, threadId: randomUUID(), runId: reused }, { key: OTHER_KEY });
    expect(theirs.status).toBe(200);
    expect(String(theirs.body)).toMatch(/"type":"RUN_FINISHED".*"outcome":\{"type":"success"\}/);

    // Through the client: the run fails with the server's status, nothing is started.
    const agent = createAgent();
    agent.addMessage({ id: randomUUID(), role: "user", content: "hi" });
    await expect(agent.runAgent({ forwardedProps: { agent: "nobody" } })).rejects.toMatchObject({ status: 404 });
  });
});
