/**
 * The LangGraph Agent Server subset, through the real `@langchain/langgraph-sdk` Client, unchanged,
 * against a real server: stream, Stop, replay, wait, assistants, and bad input.
 */
import { Client } from "@langchain/langgraph-sdk";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "./support/harness.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";

type Part = { id?: string; event: string; data: any };

const human = (content: string) => ({ messages: [{ type: "human", content }] });
const MODES = ["values", "messages-tuple", "updates"] as const;

/** The text of the `messages` parts (the answer's streamed chunks), joined. */
const chunkText = (parts: readonly Part[]) =>
  parts.filter((part) => part.event === "messages" && part.data[0].type === "AIMessageChunk").map((part) => part.data[0].content as string).join("");

async function collect(stream: AsyncIterable<Part>, until?: (part: Part) => boolean): Promise<Part[]> {
  const parts: Part[] = [];
  for await (const part of stream) {
    parts.push(part);
    if (until?.(part)) break;
  }
  return parts;
}

describe("the LangGraph SDK's Client against /langgraph", () => {
  let h: Harness;
  let client: Client;

  beforeAll(async () => {
    h = await startHarness();
    client = new Client({ apiUrl: h.url + "/langgraph" });
  });
  afterEach(async () => {
    await h.expectNoViolations();
  });
  afterAll(async () => {
    await h.close();
  });

  it("assistants.search lists the deployed agents", async () => {
    const assistants = await client.assistants.search();
    expect(assistants.map((assistant) => assistant.assistant_id)).toEqual(expect.arrayContaining(["chat", "research"]));
    expect(assistants.find((assistant) => assistant.assistant_id === "chat")).toMatchObject({ graph_id: "chat", name: "chat", version: 1 });
    expect(await client.assistants.search({ graphId: "research" })).toHaveLength(1);
  });

  it("runs.stream with streamResumable streams the answer; the thread's state holds it; joinStream from -1 replays the same parts", async () => {
    const thread = await client.threads.create();
    expect(thread).toMatchObject({ status: "idle", values: { messages: [] } });
    let created: { run_id: string; thread_id?: string } | undefined;
    const parts = await collect(
      client.runs.stream(thread.thread_id, "chat", {
        input: human("Hello from LangGraph"),
        streamMode: [...MODES],
        streamResumable: true,
        onRunCreated: (meta) => (created = meta),
      }) as AsyncIterable<Part>,
    );
    expect(created?.thread_id).toBe(thread.thread_id);
    const runId = created!.run_id;
    expect(parts[0]).toMatchObject({ event: "metadata", data: { run_id: runId, thread_id: thread.thread_id } });
    const values = parts.filter((part) => part.event === "values");
    expect(values[0]!.data.messages).toEqual([expect.objectContaining({ type: "human", content: "Hello from LangGraph" })]);
    const final = values.at(-1)!.data.messages;
    expect(final.map((message: any) => message.type)).toEqual(["human", "ai"]);
    expect(final[1].content.length).toBeGreaterThan(0);
    expect(chunkText(parts)).toBe(final[1].content);
    expect(parts.filter((part) => part.event === "updates").map((part) => part.data)).toEqual([{ agent: { messages: [final[1]] } }]);
    // Every part has an id, and the ids are distinct and in order.
    const ids = parts.slice(1).map((part) => part.id!);
    expect(new Set(ids).size).toBe(ids.length);

    expect(await client.runs.get(thread.thread_id, runId)).toMatchObject({ run_id: runId, thread_id: thread.thread_id, assistant_id: "chat", status: "success" });
    const state = await client.threads.getState(thread.thread_id);
    expect((state.values as any).messages).toEqual(final);
    expect(await client.threads.get(thread.thread_id)).toMatchObject({ status: "idle", values: { messages: final } });
    const history = await client.threads.getHistory(thread.thread_id, { limit: 100 });
    expect(history[0]!.checkpoint.checkpoint_id).toBe(state.checkpoint.checkpoint_id);
    expect((history.at(-1)!.values as any).messages).toEqual([]);

    // A replay from the start gives exactly the parts the live stream gave.
    const replay = await collect(client.runs.joinStream(thread.thread_id, runId, { lastEventId: "-1", streamMode: [...MODES] }) as AsyncIterable<Part>);
    expect(replay).toEqual(parts);
    // From a part in the middle: exactly the rest.
    const middle = Math.floor(parts.length / 2);
    const rest = await collect(client.runs.joinStream(thread.thread_id, runId, { lastEventId: parts[middle]!.id, streamMode: [...MODES] }) as AsyncIterable<Part>);
    expect(rest).toEqual(parts.slice(middle + 1));
    // A join without Last-Event-ID of a finished run has nothing left to send.
    expect(await collect(client.runs.joinStream(thread.thread_id, runId) as AsyncIterable<Part>)).toEqual([]);
  });

  it("runs.wait completes with the answer, and runs.join gives the same values", async () => {
    const thread = await client.threads.create();
    const values = (await client.runs.wait(thread.thread_id, "chat", { input: human("Wait for me") })) as any;
    expect(values.messages.map((message: any) => message.type)).toEqual(["human", "ai"]);
    expect(values.messages[1].content.length).toBeGreaterThan(0);
    expect((await client.threads.getState(thread.thread_id)).values).toEqual(values);
    const run = await client.runs.create(thread.thread_id, "chat", { input: human("And again") });
    expect(run).toMatchObject({ status: expect.stringMatching(/^(pending|running|success)$/), assistant_id: "chat" });
    const joined = (await client.runs.join(thread.thread_id, run.run_id)) as any;
    expect(joined.messages.map((message: any) => message.type)).toEqual(["human", "ai", "human", "ai"]);
    expect((await client.runs.get(thread.thread_id, run.run_id)).status).toBe("success");
  });

  it("answers bad input with a 4xx in the Agent Server's shape, never a 5xx", async () => {
    const thread = await client.threads.create();
    const statusOf = (promise: Promise<unknown>) => promise.then(() => 200, (error: { status?: number }) => error.status);
    expect(await statusOf(client.threads.getState("thr_01jd8x0f1ae2rbv7c9ks0d8m5q"))).toBe(404);
    expect(await statusOf(client.threads.get("not-a-thread\u0000"))).toBe(404);
    expect(await statusOf(client.runs.get(thread.thread_id, "run_01jd8x0f1ae2rbv7c9ks0d8m5q"))).toBe(404);
    expect(await statusOf(client.runs.create(thread.thread_id, "no-such-agent", { input: human("hi") }))).toBe(404);
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { input: { messages: [] } }))).toBe(422);
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { input: human("a\u0000b") }))).toBe(422);
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { input: human("hi"), multitaskStrategy: "undo" as any }))).toBe(422);
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { input: human("hi"), command: { resume: "yes" } }))).toBe(422);
    for (const body of ["{not json", JSON.stringify({ assistant_id: "chat", input: human("x"), deep: JSON.parse("[".repeat(100) + "]".repeat(100)) })]) {
      const response = await fetch(`${h.url}/langgraph/threads/${thread.thread_id}/runs`, { method: "POST", headers: { "content-type": "application/json" }, body });
      expect(response.status).toBe(422);
      expect(await response.json()).toMatchObject({ detail: expect.any(String), error: expect.any(String) });
    }
    expect(await statusOf(client.runs.create(thread.thread_id, "chat", { input: human("hi"), checkpointId: "cp_01jd8x0f1ae2rbv7c9ks0d8m5q" }))).toBe(409);
    const huge = await fetch(`${h.url}/langgraph/threads/${thread.thread_id}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ assistant_id: "chat", input: human("x".repeat(2 * 1024 * 1024)) }),
    });
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ detail: expect.any(String), error: "payload_too_large" });
    const unknownRoute = await fetch(`${h.url}/langgraph/crons`);
    expect(unknownRoute.status).toBe(404);
    expect(await unknownRoute.json()).toMatchObject({ detail: expect.any(String) });
    // The thread was never touched by the refused runs.
    expect((await client.threads.getState(thread.thread_id)).values).toEqual({ messages: [] });
  });
});

describe("Stop through the LangGraph SDK", () => {
  let h: Harness;
  let client: Client;

  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 40, wordCount: 2000 } });
    client = new Client({ apiUrl: h.url + "/langgraph" });
  });
  afterEach(async () => {
    await h.expectNoViolations();
  });
  afterAll(async () => {
    await h.close();
  });

  it("runs.cancel(thread, run, true) leaves the run interrupted and the state with only the user's message", async () => {
    const thread = await client.threads.create();
    let runId: string | undefined;
    const stream = client.runs.stream(thread.thread_id, "chat", {
      input: human("Tell me a long story"),
      streamMode: ["values", "messages-tuple"],
      streamResumable: true,
      onRunCreated: (meta) => (runId = meta.run_id),
    }) as AsyncIterable<Part>;
    const iterator = stream[Symbol.asyncIterator]();
    const parts: Part[] = [];
    // Read until the answer has streamed a few chunks.
    while (parts.filter((part) => part.event === "messages").length < 3) parts.push((await iterator.next()).value as Part);
    const cancelled = (await client.runs.cancel(thread.thread_id, runId!, true)) as any;
    expect(cancelled).toMatchObject({ run_id: runId, status: "interrupted" });
    // The open stream ends right after, with no values holding a partial answer.
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) parts.push(next.value as Part);
    for (const part of parts.filter((part) => part.event === "values")) expect(part.data.messages.map((message: any) => message.type)).toEqual(["human"]);
    expect((await client.runs.get(thread.thread_id, runId!)).status).toBe("interrupted");
    const state = await client.threads.getState(thread.thread_id);
    expect((state.values as any).messages).toEqual([expect.objectContaining({ type: "human", content: "Tell me a long story" })]);
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
    // A second cancel says the same; an action that is neither interrupt nor rollback is refused.
    expect(await client.runs.cancel(thread.thread_id, runId!, true)).toMatchObject({ status: "interrupted" });
    await expect(client.runs.cancel(thread.thread_id, runId!, true, "undo" as any)).rejects.toMatchObject({ status: 422 });
    // The replay holds the chunks the client saw before the Stop, but nothing was published.
    const replay = await collect(client.runs.joinStream(thread.thread_id, runId!, { lastEventId: "-1" }) as AsyncIterable<Part>);
    expect(replay.filter((part) => part.event === "updates")).toEqual([]);
  });

  it("multitask_strategy reject refuses a second run with 409; interrupt stops the first and starts the second", async () => {
    const thread = await client.threads.create();
    const first = await client.runs.create(thread.thread_id, "chat", { input: human("First") });
    await expect(client.runs.create(thread.thread_id, "chat", { input: human("Second"), multitaskStrategy: "reject" })).rejects.toMatchObject({ status: 409 });
    const second = await client.runs.create(thread.thread_id, "chat", { input: human("Third"), multitaskStrategy: "interrupt" });
    expect((await client.runs.get(thread.thread_id, first.run_id)).status).toBe("interrupted");
    expect(await client.runs.cancel(thread.thread_id, second.run_id, true)).toMatchObject({ status: "interrupted" });
    const messages = ((await client.threads.getState(thread.thread_id)).values as any).messages;
    expect(messages.map((message: any) => [message.type, message.content])).toEqual([
      ["human", "First"],
      ["human", "Third"],
    ]);
  });
});

describe("tenants, disconnects and reconnects through the LangGraph SDK", () => {
  let h: Harness;
  let proxy: TcpProxy;
  let client: Client;
  const KEY = "lg-key-a";
  const bearer = (key: string) => ({ defaultHeaders: { authorization: `Bearer ${key}` } });

  beforeAll(async () => {
    h = await startHarness({
      demo: { wordsPerSecond: 100, wordCount: 150 },
      apiKeys: new Map([
        [KEY, "tenant-a"],
        ["lg-key-b", "tenant-b"],
      ]),
      disconnectGraceMs: 50,
    });
    proxy = await startTcpProxy(h.url);
    client = new Client({ apiUrl: proxy.url + "/langgraph", ...bearer(KEY) });
  });
  afterEach(async () => {
    await h.expectNoViolations();
  });
  afterAll(async () => {
    await proxy.close();
    await h.close();
  });

  it("takes the tenant from Authorization: Bearer (or the SDK's apiKey); another tenant's thread is not found", async () => {
    const thread = await client.threads.create();
    const anonymous = await fetch(`${h.url}/langgraph/threads/${thread.thread_id}`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ detail: expect.any(String), error: "unauthorized" });
    const other = new Client({ apiUrl: h.url + "/langgraph", ...bearer("lg-key-b") });
    await expect(other.threads.get(thread.thread_id)).rejects.toMatchObject({ status: 404 });
    await expect(other.runs.create(thread.thread_id, "chat", { input: human("not yours") })).rejects.toMatchObject({ status: 404 });
    const withApiKey = new Client({ apiUrl: h.url + "/langgraph", apiKey: KEY });
    expect((await withApiKey.threads.get(thread.thread_id)).thread_id).toBe(thread.thread_id);
  });

  it("a stream whose connection drops reconnects through Location with Last-Event-ID and gets every part once", async () => {
    const thread = await client.threads.create();
    const connectionsBefore = proxy.connectionCount;
    let runId: string | undefined;
    const parts: Part[] = [];
    for await (const part of client.runs.stream(thread.thread_id, "chat", {
      input: human("Survive a dropped connection"),
      streamMode: [...MODES],
      streamResumable: true,
      onRunCreated: (meta) => (runId = meta.run_id),
    }) as AsyncIterable<Part>) {
      parts.push(part);
      if (parts.filter((seen) => seen.event === "messages").length === 3) expect(proxy.dropConnections()).toBeGreaterThan(0);
    }
    expect(proxy.connectionCount).toBeGreaterThan(connectionsBefore + 1);
    const replay = await collect(client.runs.joinStream(thread.thread_id, runId!, { lastEventId: "-1", streamMode: [...MODES] }) as AsyncIterable<Part>);
    expect(parts).toEqual(replay);
    expect((await client.runs.get(thread.thread_id, runId!)).status).toBe("success");
  });

  it("a run without input continues a stopped one (Continue); a cancel of a finished run returns it unchanged", async () => {
    const thread = await client.threads.create();
    let runId: string | undefined;
    let chunks = 0;
    for await (const part of client.runs.stream(thread.thread_id, "chat", {
      input: human("Stop me, then go on"),
      streamMode: ["messages-tuple"],
      onRunCreated: (meta) => (runId = meta.run_id),
    }) as AsyncIterable<Part>) {
      if (part.event === "messages" && ++chunks === 2) expect(await client.runs.cancel(thread.thread_id, runId!, true)).toMatchObject({ status: "interrupted" });
    }
    const values = (await client.runs.wait(thread.thread_id, "chat")) as any;
    expect(values.messages.map((message: any) => message.type)).toEqual(["human", "ai"]);
    expect((await client.threads.getState(thread.thread_id)).values).toEqual(values);
    const finished = await client.runs.create(thread.thread_id, "chat", { input: human("One more") });
    await client.runs.join(thread.thread_id, finished.run_id);
    expect(await client.runs.cancel(thread.thread_id, finished.run_id, true)).toMatchObject({ run_id: finished.run_id, status: "success" });
    expect(((await client.threads.getState(thread.thread_id)).values as any).messages).toHaveLength(4);
  });

  it("on_disconnect cancel: a client that leaves the stream stops the run, and nothing of its answer is kept", async () => {
    const thread = await client.threads.create();
    const controller = new AbortController();
    let runId: string | undefined;
    let chunks = 0;
    for await (const part of client.runs.stream(thread.thread_id, "chat", {
      input: human("Leave me"),
      streamMode: ["messages-tuple"],
      onDisconnect: "cancel",
      signal: controller.signal,
      onRunCreated: (meta) => (runId = meta.run_id),
    }) as AsyncIterable<Part>) {
      if (part.event === "messages" && ++chunks === 2) controller.abort();
    }
    // join waits until the run is terminal.
    await client.runs.join(thread.thread_id, runId!);
    expect((await client.runs.get(thread.thread_id, runId!)).status).toBe("interrupted");
    expect(((await client.threads.getState(thread.thread_id)).values as any).messages.map((message: any) => message.type)).toEqual(["human"]);
  });
});
