/**
 * Issue 16's LangGraph gaps through the real `@langchain/langgraph-sdk` Client against a real
 * server: `runs.cancel(…, "rollback")` and `multitask_strategy: "rollback"` take the stopped run's
 * input back as a new version (docs/decisions/012); `command: {resume}` approves or rejects a run
 * paused before a consequential tool, and the same run goes on.
 */
import { Client } from "@langchain/langgraph-sdk";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDemoModel } from "../src/runtime/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { createGatedModel, gatedWhenAskedTo } from "./support/client-session.js";
import { startHarness, type Harness } from "./support/harness.js";

type Part = { id?: string; event: string; data: any };

const human = (content: string) => ({ messages: [{ type: "human", content }] });
const typesAndContents = (messages: any[]) => messages.map((message) => [message.type, message.content]);

describe("rollback and command through the LangGraph SDK", () => {
  let h: Harness;
  let client: Client;
  let dir: string;
  let outbox: DemoOutbox;
  // An answer to a message starting with "gate" streams a few words, then waits (until a Stop).
  const gated = createGatedModel();
  const demo = createDemoModel({ wordsPerSecond: 300, wordCount: 20 });
  const model = gatedWhenAskedTo(gated, demo);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-lg-rollback-"));
    outbox = createDemoOutbox(join(dir, "outbox.db"), { sendDelayMs: 10 });
    h = await startHarness({ model, tools: createDemoTools({ outbox, searchDelayMs: 10 }) });
    client = new Client({ apiUrl: h.url + "/langgraph" });
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

  /** Starts a gated run on the thread and reads its stream until the answer has streamed; the run id and the open iterator. */
  async function streamingRun(threadId: string, text: string) {
    let runId: string | undefined;
    const stream = client.runs.stream(threadId, "chat", { input: human(text), streamMode: ["messages-tuple"], onRunCreated: (meta) => (runId = meta.run_id) });
    const iterator = (stream as AsyncIterable<Part>)[Symbol.asyncIterator]();
    for (let chunks = 0; chunks < 2; ) if (((await iterator.next()).value as Part).event === "messages") chunks++;
    return { runId: runId!, iterator };
  }

  /** Starts a run that pauses before a consequential tool, reading its stream up to the interrupt. */
  async function pausedRun(threadId: string, text: string): Promise<{ runId: string; interrupt: any }> {
    let runId: string | undefined;
    for await (const part of client.runs.stream(threadId, "chat", { input: human(text), streamMode: ["updates"], onRunCreated: (meta) => (runId = meta.run_id) }) as AsyncIterable<Part>) {
      if (part.event === "updates" && part.data.__interrupt__) return { runId: runId!, interrupt: part.data.__interrupt__[0] };
    }
    throw new Error("the run ended without pausing for an approval");
  }

  async function drain(iterator: AsyncIterator<unknown>): Promise<void> {
    for (let next = await iterator.next(); !next.done; next = await iterator.next());
  }

  const rawCancel = (threadId: string, runId: string, action: string) =>
    fetch(`${h.url}/langgraph/threads/${threadId}/runs/${runId}/cancel?wait=1&action=${action}`, { method: "POST" });

  it("runs.cancel(…, rollback) stops the run and takes its input back as a new version; history keeps the prior state; a repeat answers the same", async () => {
    const thread = await client.threads.create();
    await client.runs.wait(thread.thread_id, "chat", { input: human("Hello first") });
    const before = await client.threads.getState(thread.thread_id);
    const { runId, iterator } = await streamingRun(thread.thread_id, "gate: tell me a long story");

    expect(await client.runs.cancel(thread.thread_id, runId, true, "rollback")).toMatchObject({ run_id: runId, status: "interrupted" });
    await drain(iterator);

    const state = await client.threads.getState(thread.thread_id);
    // Neither the partial answer nor the input: the thread is as it was before the run.
    expect((state.values as any).messages).toEqual((before.values as any).messages);
    expect(state.metadata).toMatchObject({ kind: "run_rolled_back", run_id: runId });
    const version = (state.metadata as any).state_version as number;
    expect(version).toBe((before.metadata as any).state_version + 3); // input, cancel, rollback
    // The state before the rollback still shows the input, and no partial answer.
    const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    expect(history[0]!.checkpoint.checkpoint_id).toBe(state.checkpoint.checkpoint_id);
    expect(history[1]!.metadata).toMatchObject({ kind: "cancel_accepted" });
    expect(typesAndContents((history[1]!.values as any).messages)).toEqual([
      ...typesAndContents((before.values as any).messages),
      ["human", "gate: tell me a long story"],
    ]);
    // A replay of the run's stream shows the states as they were live: the input, no answer.
    const replay: Part[] = [];
    for await (const part of client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1", streamMode: ["values"] }) as AsyncIterable<Part>) replay.push(part);
    const replayed = replay.filter((part) => part.event === "values").map((part) => typesAndContents(part.data.messages));
    expect(replayed).toEqual([[...typesAndContents((before.values as any).messages), ["human", "gate: tell me a long story"]]]);
    const native = await (await fetch(`${h.url}/v1/threads/${thread.thread_id}/history`)).json();
    expect(native.messages.map((message: any) => message.content)).not.toContain("gate: tell me a long story");

    // Idempotent: the same outcome, no new version.
    expect(await client.runs.cancel(thread.thread_id, runId, true, "rollback")).toMatchObject({ run_id: runId, status: "interrupted" });
    expect(((await client.threads.getState(thread.thread_id)).metadata as any).state_version).toBe(version);
    // The thread goes on from there.
    const values = (await client.runs.wait(thread.thread_id, "chat", { input: human("Something else") })) as any;
    expect(typesAndContents(values.messages).slice(0, 3)).toEqual([...typesAndContents((before.values as any).messages), ["human", "Something else"]]);
  });

  it("refuses a rollback once a later message was published (409 rollback_conflict), and of a completed run (409 run_not_rollbackable)", async () => {
    const thread = await client.threads.create();
    const { runId, iterator } = await streamingRun(thread.thread_id, "gate: stop me");
    expect(await client.runs.cancel(thread.thread_id, runId, true)).toMatchObject({ status: "interrupted" });
    await drain(iterator);
    const later = await client.runs.create(thread.thread_id, "chat", { input: human("A later message") });
    await client.runs.join(thread.thread_id, later.run_id);
    const versionBefore = ((await client.threads.getState(thread.thread_id)).metadata as any).state_version;

    await expect(client.runs.cancel(thread.thread_id, runId, true, "rollback")).rejects.toMatchObject({ status: 409 });
    const conflict = await rawCancel(thread.thread_id, runId, "rollback");
    expect(conflict.status).toBe(409);
    expect(await conflict.json()).toMatchObject({ detail: expect.any(String), error: "rollback_conflict" });

    const completed = await rawCancel(thread.thread_id, later.run_id, "rollback");
    expect(completed.status).toBe(409);
    expect(await completed.json()).toMatchObject({ error: "run_not_rollbackable", reason: "completed" });
    const state = await client.threads.getState(thread.thread_id);
    expect((state.metadata as any).state_version).toBe(versionBefore);
    expect(typesAndContents((state.values as any).messages).slice(0, 2)).toEqual([
      ["human", "gate: stop me"],
      ["human", "A later message"],
    ]);
  });

  it("multitask_strategy rollback stops the active run, takes its input back, then starts the new one", async () => {
    const thread = await client.threads.create();
    const { runId: first, iterator } = await streamingRun(thread.thread_id, "gate: the first question");
    const second = await client.runs.create(thread.thread_id, "chat", { input: human("The second question"), multitaskStrategy: "rollback" });
    await drain(iterator);
    expect((await client.runs.get(thread.thread_id, first)).status).toBe("interrupted");
    const values = (await client.runs.join(thread.thread_id, second.run_id)) as any;
    expect(typesAndContents(values.messages)[0]).toEqual(["human", "The second question"]);
    expect(values.messages.map((message: any) => message.type)).toEqual(["human", "ai"]);
    expect((await client.runs.get(thread.thread_id, second.run_id)).status).toBe("success");
  });

  it("command resume true approves the operation a run paused before; the same run goes on and streams as the new run", async () => {
    const thread = await client.threads.create();
    const { runId, interrupt } = await pausedRun(thread.thread_id, "email ada@example.com the report");
    expect(interrupt.value).toMatchObject({ tool: "send_email" });
    expect((await client.runs.get(thread.thread_id, runId)).status).toBe("interrupted");
    expect((await client.threads.get(thread.thread_id)).status).toBe("interrupted");

    let resumedRunId: string | undefined;
    const resumed: Part[] = [];
    for await (const part of client.runs.stream(thread.thread_id, "chat", {
      command: { resume: true },
      streamMode: ["updates"],
      onRunCreated: (meta) => (resumedRunId = meta.run_id),
    }) as AsyncIterable<Part>) {
      resumed.push(part);
    }
    expect(resumedRunId).toBe(runId);
    // Only what came after the pause: the tool's result and the answer, no second interrupt.
    const updates = resumed.filter((part) => part.event === "updates").map((part) => part.data);
    expect(updates.some((update) => update.__interrupt__)).toBe(false);
    expect(updates[0]).toMatchObject({ tools: { messages: [expect.objectContaining({ type: "tool" })] } });
    expect((await client.runs.get(thread.thread_id, runId)).status).toBe("success");
    expect(Object.values(outbox.countByKey())).toContain(1);
  });

  it("join of a run paused for an approval answers at once (it waited forever before: found by the HTTP fuzz)", async () => {
    const thread = await client.threads.create();
    const { runId } = await pausedRun(thread.thread_id, "email carol@example.com the invoice");
    const joined = await fetch(`${h.url}/langgraph/threads/${thread.thread_id}/runs/${runId}/join`, { signal: AbortSignal.timeout(5_000) });
    expect(joined.status).toBe(200);
    expect((await joined.json()).messages).toEqual(expect.arrayContaining([expect.objectContaining({ type: "human", content: "email carol@example.com the invoice" })]));
    expect((await client.runs.get(thread.thread_id, runId)).status).toBe("interrupted");
    // A Stop with ?wait=1 still waits until the run is really over.
    expect(await client.runs.cancel(thread.thread_id, runId, true)).toMatchObject({ run_id: runId, status: "interrupted" });
    expect((await h.api(`/v1/runs/${runId}`)).body.status).toBe("cancelled");
  });

  it("command resume {approved: false} rejects it: nothing is sent and the run ends; bad commands are 4xx, never 5xx", async () => {
    const thread = await client.threads.create();
    const sentBefore = Object.keys(outbox.countByKey()).length;
    const { runId } = await pausedRun(thread.thread_id, "email bob@example.com the summary");
    const statusOf = (promise: Promise<unknown>) => promise.then(() => 200, (error: { status?: number }) => error.status);
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { command: { resume: "yes" } }))).toBe(422);
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { command: { goto: "agent" } }))).toBe(422);
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { command: { resume: true }, input: human("both") }))).toBe(422);
    expect(await statusOf(client.runs.create("thr_01jd8x0f1ae2rbv7c9ks0d8m5q", "chat", { command: { resume: true } }))).toBe(404);
    const bad = await fetch(`${h.url}/langgraph/threads/${thread.thread_id}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ assistant_id: "chat", command: [true] }),
    });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toMatchObject({ detail: expect.any(String), error: "invalid_request" });

    const values = (await client.runs.wait(thread.thread_id, "chat", { command: { resume: { approved: false } } })) as any;
    expect(values.__error__).toBeUndefined();
    expect((await client.runs.get(thread.thread_id, runId)).status).toBe("success");
    expect(Object.keys(outbox.countByKey()).length).toBe(sentBefore);
    // Nothing waits any more: a resume now is a 409.
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { command: { resume: true } }))).toBe(409);
  });
});
