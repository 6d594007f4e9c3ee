/**
 * The OpenAI Responses layer (background mode) through the official `openai` client, unchanged,
 * against a real server: a response is a run, a model is an agent, cancel is Tidemark's Stop.
 */
import OpenAI from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ChatModel, ModelRequest } from "../src/runtime/index.js";
import { createDemoModel } from "../src/runtime/index.js";
import { eventually } from "./support/eventually.js";
import { startHarness, type Harness } from "./support/harness.js";

/** The run id a response id names (`resp_<suffix>` ↔ `run_<suffix>`). */
const runIdOf = (responseId: string): string => `run_${responseId.slice("resp_".length)}`;

describe("the OpenAI Responses layer, through the official client", () => {
  let h: Harness;
  let client: OpenAI;
  /** Every request the model was asked to continue, in order. */
  const modelRequests: ModelRequest[] = [];

  beforeAll(async () => {
    const demo = createDemoModel({ wordsPerSecond: 400, wordCount: 300 });
    const model: ChatModel = {
      id: demo.id,
      stream: (request, options) => {
        modelRequests.push(request);
        return demo.stream(request, options);
      },
      title: demo.title,
    };
    h = await startHarness({ model });
    client = new OpenAI({ baseURL: h.url + "/v1", apiKey: "x" });
  });
  afterEach(async () => {
    await h.expectNoViolations();
  });
  afterAll(async () => {
    await h.close();
  });

  it("lists the agents as models", async () => {
    const models = [];
    for await (const model of client.models.list()) models.push(model);
    expect(models.map((model) => model.id)).toEqual(expect.arrayContaining(["chat", "research"]));
    expect(models[0]).toMatchObject({ object: "model", owned_by: "tidemark" });
    expect((await client.models.retrieve("chat")).id).toBe("chat");
  });

  it("background stream → cancel after 3 deltas: cancelled, no partial text anywhere, a second cancel answers the same", async () => {
    const stream = await client.responses.create({ model: "chat", input: "Tell me a long story", background: true, stream: true });
    const events: ResponseStreamEvent[] = [];
    let responseId = "";
    let deltas = 0;
    let cancelled: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      events.push(event);
      if (event.type === "response.created") responseId = event.response.id;
      if (event.type === "response.output_text.delta" && ++deltas === 3) cancelled = await client.responses.cancel(responseId);
    }
    // The scaffolding in order, numbered without a gap.
    expect(events.slice(0, 5).map((event) => event.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    // The stream ended right after the Stop, with a type the client knows, carrying the cancelled response.
    const last = events.at(-1)!;
    expect(last.type).toBe("response.incomplete");
    if (last.type !== "response.incomplete") throw new Error("unreachable");
    expect(last.response).toMatchObject({ id: responseId, status: "cancelled", output: [] });
    expect(events.map((event) => event.type)).not.toContain("response.output_text.done");

    expect(cancelled).toMatchObject({ id: responseId, status: "cancelled", output: [], output_text: "", background: true });
    const again = await client.responses.cancel(responseId);
    expect(again).toEqual(cancelled);
    expect(await client.responses.retrieve(responseId)).toEqual(cancelled);

    // The native view agrees: the run is cancelled and history holds the user's message only.
    const run = await h.api(`/v1/runs/${runIdOf(responseId)}`);
    expect(run.body.status).toBe("cancelled");
    const history = await h.api(`/v1/threads/${run.body.thread_id}/history`);
    expect(history.body.messages.map((message: { role: string }) => message.role)).toEqual(["user"]);

    // The client's own accumulator replays the stopped stream to the same cancelled response.
    const replayed = await client.responses.stream({ response_id: responseId }).finalResponse();
    expect(replayed).toMatchObject({ id: responseId, status: "cancelled", output: [], output_text: "" });
  });

  it("background create, then poll to completed; a cancel of a completed response returns it unchanged", async () => {
    const created = await client.responses.create({ model: "chat", input: "Hello in the background", background: true });
    expect(["queued", "in_progress"]).toContain(created.status);
    expect(created.output).toEqual([]);
    // Waits for the run's terminal event (not for time), then polls once more.
    await h.events(runIdOf(created.id));
    const done = await client.responses.retrieve(created.id);
    expect(done.status).toBe("completed");
    expect(done.output_text).toContain('You wrote: "Hello in the background"');
    expect(done.output).toHaveLength(1);
    expect(done.usage?.output_tokens).toBeGreaterThan(0);
    expect(await client.responses.cancel(created.id)).toEqual(done);
  });

  it("replays with starting_after: the events after that number, then the end", async () => {
    const created = await client.responses.create({ model: "chat", input: "Replay me", background: true });
    await h.events(runIdOf(created.id));
    const all: ResponseStreamEvent[] = [];
    for await (const event of await client.responses.retrieve(created.id, { stream: true })) all.push(event);
    expect(all.at(-1)?.type).toBe("response.completed");
    expect(all.map((event) => event.sequence_number)).toEqual(all.map((_, index) => index));
    const rest: ResponseStreamEvent[] = [];
    for await (const event of await client.responses.retrieve(created.id, { stream: true, starting_after: 5 })) rest.push(event);
    expect(rest).toEqual(all.slice(6));
    // The accumulator builds the same text from a replay.
    const final = await client.responses.stream({ response_id: created.id, starting_after: 5 }).finalResponse();
    expect(final.output_text).toBe((await client.responses.retrieve(created.id)).output_text);
  });

  it("streams without background and ends with the completed response", async () => {
    const stream = client.responses.stream({ model: "chat", input: "Stream this" });
    let text = "";
    stream.on("response.output_text.delta", (event) => (text += event.delta));
    const final = await stream.finalResponse();
    expect(final.status).toBe("completed");
    expect(final.output_text).toBe(text);
    expect(final.background).toBe(false);
  });

  it("previous_response_id continues that response's thread: the model sees the earlier turn", async () => {
    const first = await client.responses.create({ model: "chat", input: "My name is Ada" });
    expect(first.status).toBe("completed");
    const requestsBefore = modelRequests.length;
    const second = await client.responses.create({ model: "chat", input: "What is my name?", previous_response_id: first.id });
    expect(second.status).toBe("completed");
    expect(second.previous_response_id).toBe(first.id);
    const seen = modelRequests.slice(requestsBefore).at(-1)!.messages;
    expect(seen.map((message) => message.role)).toEqual(["user", "assistant", "user"]);
    expect(seen[0]!.content).toBe("My name is Ada");
    expect(seen[1]!.content).toBe(first.output_text);
    expect(seen[2]!.content).toBe("What is my name?");
    // One thread holds both turns.
    const run = await h.api(`/v1/runs/${runIdOf(second.id)}`);
    expect((await h.api(`/v1/runs/${runIdOf(first.id)}`)).body.thread_id).toBe(run.body.thread_id);
  });

  it("previous_response_id of an earlier response continues from it, on a branch: the later turns stay out of its context and their thread is unchanged", async () => {
    const history = async (threadId: string) =>
      ((await h.api(`/v1/threads/${threadId}/history`)).body.messages as { role: string; content: string; run_id: string }[]).map(
        ({ role, content, run_id }) => ({ role, content, run_id }),
      );
    const r1 = await client.responses.create({ model: "chat", input: "First: my name is Ada" });
    const r2 = await client.responses.create({ model: "chat", input: "Second: I live in Lyon", previous_response_id: r1.id });
    expect(r2.status).toBe("completed");
    const thread2 = (await h.api(`/v1/runs/${runIdOf(r2.id)}`)).body.thread_id as string;
    const before = await history(thread2);

    const requestsBefore = modelRequests.length;
    const r3 = await client.responses.create({ model: "chat", input: "Third: what is my name?", previous_response_id: r1.id });
    expect(r3.status).toBe("completed");
    expect(r3.previous_response_id).toBe(r1.id);
    // The model saw r1's exchange and r3's input, nothing of r2's.
    const seen = modelRequests.slice(requestsBefore).at(-1)!.messages;
    expect(seen.map((message) => [message.role, message.content])).toEqual([
      ["user", "First: my name is Ada"],
      ["assistant", r1.output_text],
      ["user", "Third: what is my name?"],
    ]);
    // r3 runs on a branch of r1's thread; r2's thread is exactly as it was.
    const thread3 = (await h.api(`/v1/runs/${runIdOf(r3.id)}`)).body.thread_id as string;
    expect(thread3).not.toBe(thread2);
    expect((await h.api(`/v1/threads/${thread3}`)).body.forked_from).toMatchObject({ thread_id: thread2 });
    expect(await history(thread2)).toEqual(before);
    expect((await history(thread3)).map((message) => message.content)).toEqual([
      "First: my name is Ada",
      r1.output_text,
      "Third: what is my name?",
      r3.output_text,
    ]);
    // The branch goes on from r3 like any thread; r2 can still be continued on its own thread.
    const r4 = await client.responses.create({ model: "chat", input: "Fourth", previous_response_id: r3.id });
    expect((await h.api(`/v1/runs/${runIdOf(r4.id)}`)).body.thread_id).toBe(thread3);
    const r5 = await client.responses.create({ model: "chat", input: "Fifth", previous_response_id: r2.id });
    expect((await h.api(`/v1/runs/${runIdOf(r5.id)}`)).body.thread_id).toBe(thread2);
    expect(r5.previous_response_id).toBe(r2.id);
  });

  it("a turn that slips in after the thread was read: the response branches from the one it names instead", async () => {
    const r1 = await client.responses.create({ model: "chat", input: "Before the race" });
    const threadId = (await h.api(`/v1/runs/${runIdOf(r1.id)}`)).body.thread_id as string;
    // Another turn lands on r1's thread right after the layer read it (its latest message is still r1's).
    const store = h.tidemark.runtime.store;
    const listMessages = store.listMessages.bind(store);
    let slipped: string | undefined;
    store.listMessages = async (tenantId, id, options) => {
      const messages = await listMessages(tenantId, id, options);
      if (slipped === undefined && id === threadId && options?.limit === 1) {
        const run = await h.startRun(threadId, "Slipped in");
        slipped = run.run_id as string;
        await h.events(slipped);
      }
      return messages;
    };
    let r2: OpenAI.Responses.Response;
    try {
      r2 = await client.responses.create({ model: "chat", input: "After the race", previous_response_id: r1.id }, { maxRetries: 0 });
    } finally {
      store.listMessages = listMessages;
    }
    expect(slipped).toBeDefined();
    expect(r2).toMatchObject({ status: "completed", previous_response_id: r1.id });
    const thread2 = (await h.api(`/v1/runs/${runIdOf(r2.id)}`)).body.thread_id as string;
    expect(thread2).not.toBe(threadId);
    const contents = ((await h.api(`/v1/threads/${thread2}/history`)).body.messages as { content: string }[]).map((message) => message.content);
    expect(contents).toEqual(["Before the race", r1.output_text, "After the race", r2.output_text]);
    expect(((await h.api(`/v1/threads/${threadId}/history`)).body.messages as { run_id: string }[]).at(-1)!.run_id).toBe(slipped);
  });

  it("instructions lead this response's model requests only, are never published, and are returned with its metadata", async () => {
    const requestsBefore = modelRequests.length;
    const first = await client.responses.create({
      model: "chat",
      input: "Bonjour",
      instructions: "Answer in French.",
      metadata: { ticket: "42", customer: "ada" },
    });
    expect(first).toMatchObject({ status: "completed", instructions: "Answer in French.", metadata: { ticket: "42", customer: "ada" } });
    const seen = modelRequests.slice(requestsBefore).at(-1)!.messages;
    expect(seen.map((message) => [message.role, message.content])).toEqual([
      ["system", "Answer in French."],
      ["user", "Bonjour"],
    ]);
    // Stored with the response: a retrieve answers the same, and so does the stream's replay.
    const retrieved = await client.responses.retrieve(first.id);
    expect(retrieved).toEqual(first);
    const replayed = await client.responses.stream({ response_id: first.id }).finalResponse();
    expect(replayed).toMatchObject({ instructions: "Answer in French.", metadata: { ticket: "42", customer: "ada" } });
    // Never a message of the thread.
    const threadId = (await h.api(`/v1/runs/${runIdOf(first.id)}`)).body.thread_id as string;
    const messages = (await h.api(`/v1/threads/${threadId}/history`)).body.messages as { role: string }[];
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant"]);

    // As on OpenAI, a follow-up does not carry them over.
    const next = await client.responses.create({ model: "chat", input: "Encore", previous_response_id: first.id });
    expect(next).toMatchObject({ instructions: null, metadata: {} });
    expect(modelRequests.at(-1)!.messages.map((message) => message.role)).toEqual(["user", "assistant", "user"]);

    // Streamed and background creates keep them too.
    const streamed = await client.responses.stream({ model: "chat", input: "Stream", instructions: "Be brief.", metadata: { a: "b" } }).finalResponse();
    expect(await client.responses.retrieve(streamed.id)).toMatchObject({ instructions: "Be brief.", metadata: { a: "b" } });
    const background = await client.responses.create({ model: "chat", input: "Later", background: true, metadata: { k: "v" } });
    expect(background.metadata).toEqual({ k: "v" });
    await h.events(runIdOf(background.id));
    expect(await client.responses.retrieve(background.id)).toMatchObject({ status: "completed", instructions: null, metadata: { k: "v" } });
  });

  it("instructions lead every model request of a plan agent's run, before the agent's own system messages", async () => {
    const requestsBefore = modelRequests.length;
    const response = await client.responses.create({ model: "research", input: "Research the tides", instructions: "Cite no sources." });
    expect(response).toMatchObject({ status: "completed", instructions: "Cite no sources." });
    const requests = modelRequests.slice(requestsBefore);
    expect(requests.length).toBeGreaterThan(2);
    for (const request of requests) {
      expect(request.messages[0]).toEqual({ role: "system", content: "Cite no sources." });
      expect(request.messages.slice(1).filter((message) => message.content === "Cite no sources.")).toEqual([]);
    }
  });

  it("a native Continue of a stopped response keeps its instructions; they are still no message of the thread", async () => {
    const created = await client.responses.create({ model: "chat", input: "A long story please", background: true, instructions: "Answer in French." });
    const runId = runIdOf(created.id);
    await h.events(runId, { until: (event) => event.type === "message.delta" && event.seq >= 5 });
    const cancel = await h.api(`/v1/runs/${runId}/cancel?wait=5000`, { method: "POST" });
    expect(cancel.body.status).toBe("cancelled");
    const threadId = (await h.api(`/v1/runs/${runId}`)).body.thread_id as string;
    const requestsBefore = modelRequests.length;
    const resumed = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { resume_from_checkpoint_id: cancel.body.resume_checkpoint_id, expected_state_version: cancel.body.accepted_state_version },
    });
    expect(resumed.status).toBe(201);
    expect((await h.events(resumed.body.run_id)).at(-1)!.type).toBe("run.completed");
    const seen = modelRequests.slice(requestsBefore)[0]!.messages;
    expect(seen[0]).toEqual({ role: "system", content: "Answer in French." });
    expect(seen.slice(1).some((message) => message.content === "Answer in French.")).toBe(false);
    expect(await client.responses.retrieve(`resp_${(resumed.body.run_id as string).slice("run_".length)}`)).toMatchObject({
      status: "completed",
      instructions: "Answer in French.",
    });
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages as { role: string }[];
    expect(history.map((message) => message.role)).toEqual(["user", "assistant"]);
  });

  it("an unknown or malformed response id, model or previous response is a 404 in OpenAI's shape", async () => {
    for (const id of ["resp_01jd8x0f1ae2rbv7c9ks0d8m5q", "resp_nope", "run_01jd8x0f1ae2rbv7c9ks0d8m5q"]) {
      const retrieved = await client.responses.retrieve(id).catch((error: unknown) => error);
      expect(retrieved).toBeInstanceOf(OpenAI.NotFoundError);
      expect((retrieved as InstanceType<typeof OpenAI.NotFoundError>).error).toMatchObject({ type: "invalid_request_error", code: "run_not_found" });
      expect(await client.responses.cancel(id).catch((error: unknown) => error)).toBeInstanceOf(OpenAI.NotFoundError);
    }
    const model = await client.responses.create({ model: "gpt-nope", input: "hi" }).catch((error: unknown) => error);
    expect(model).toBeInstanceOf(OpenAI.NotFoundError);
    expect((model as InstanceType<typeof OpenAI.NotFoundError>).param).toBe("model");
    expect(await client.models.retrieve("gpt-nope").catch((error: unknown) => error)).toBeInstanceOf(OpenAI.NotFoundError);
    const previous = await client.responses
      .create({ model: "chat", input: "hi", previous_response_id: "resp_01jd8x0f1ae2rbv7c9ks0d8m5q" })
      .catch((error: unknown) => error);
    expect(previous).toBeInstanceOf(OpenAI.NotFoundError);
    expect((previous as InstanceType<typeof OpenAI.NotFoundError>).param).toBe("previous_response_id");
  });

  it("bad input gets an OpenAI-shaped 4xx, never a 5xx", async () => {
    const empty = await client.responses.create({ model: "chat", input: "" }).catch((error: unknown) => error);
    expect(empty).toBeInstanceOf(OpenAI.BadRequestError);
    expect((empty as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("input");
    const post = (body: string, contentType = "application/json") =>
      fetch(`${h.url}/v1/responses`, { method: "POST", headers: { "content-type": contentType }, body });
    const cases: [string, number, string?][] = [
      ["{not json", 400],
      [JSON.stringify({ model: "chat", input: 42 }), 400, "input"],
      [JSON.stringify({ model: "chat" }), 400, "input"],
      [JSON.stringify({ input: "hi" }), 400, "model"],
      [JSON.stringify({ model: "chat", input: "hi", instructions: 42 }), 400, "instructions"],
      [JSON.stringify({ model: "chat", input: "hi", instructions: ["Be brief."] }), 400, "instructions"],
      [JSON.stringify({ model: "chat", input: "hi", instructions: "x".repeat(100_001) }), 400, "instructions"],
      [JSON.stringify({ model: "chat", input: "hi", instructions: "a\u0000b" }), 400],
      [JSON.stringify({ model: "chat", input: "hi", instructions: "x".repeat(2 * 1024 * 1024) }), 413],
      [JSON.stringify({ model: "chat", input: "hi", metadata: "ticket" }), 400, "metadata"],
      [JSON.stringify({ model: "chat", input: "hi", metadata: ["a"] }), 400, "metadata"],
      [JSON.stringify({ model: "chat", input: "hi", metadata: { ticket: 42 } }), 400, "metadata.ticket"],
      [JSON.stringify({ model: "chat", input: "hi", metadata: { nested: { a: "b" } } }), 400, "metadata.nested"],
      [JSON.stringify({ model: "chat", input: "hi", metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }), 400, "metadata"],
      [JSON.stringify({ model: "chat", input: "hi", metadata: { ["k".repeat(65)]: "v" } }), 400],
      [JSON.stringify({ model: "chat", input: "hi", metadata: { "": "v" } }), 400],
      [JSON.stringify({ model: "chat", input: "hi", metadata: { ticket: "v".repeat(513) } }), 400, "metadata.ticket"],
      [JSON.stringify({ model: "chat", input: "hi", metadata: { ticket: "a\u0000b" } }), 400],
      [JSON.stringify({ model: "chat", input: "hi", metadata: { ["a\u0000b"]: "v" } }), 400],
      [JSON.stringify({ model: "chat", input: "a\u0000b" }), 400],
      [JSON.stringify({ model: "chat", input: "x".repeat(2 * 1024 * 1024) }), 413],
      ["[".repeat(5000) + "]".repeat(5000), 400],
      [JSON.stringify({ model: "chat", input: [{ role: "user", content: "a" }, { role: "user", content: "b" }] }), 400, "input"],
    ];
    for (const [body, status, param] of cases) {
      const response = await post(body);
      expect(response.status).toBe(status);
      const error = ((await response.json()) as { error: Record<string, unknown> }).error;
      expect(Object.keys(error).sort()).toEqual(["code", "message", "param", "type"]);
      expect(error.type).toBe("invalid_request_error");
      if (param) expect(error.param).toBe(param);
    }
    const text = await post("hi", "text/plain");
    expect(text.status).toBe(415);
    expect(((await text.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    const cursor = await fetch(`${h.url}/v1/responses/resp_01jd8x0f1ae2rbv7c9ks0d8m5q/nothing-here`);
    expect(cursor.status).toBe(404);
    expect(((await cursor.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });
});

describe("the OpenAI Responses layer with tenants, disconnects and an expired stream", () => {
  let h: Harness;
  const clientOf = (apiKey: string) => new OpenAI({ baseURL: h.url + "/v1", apiKey, maxRetries: 0 });

  beforeAll(async () => {
    h = await startHarness({
      apiKeys: new Map([
        ["key-a", "tenant-a"],
        ["key-b", "tenant-b"],
      ]),
      disconnectGraceMs: 50,
      eventTtlMs: 50,
      demo: { wordsPerSecond: 50, wordCount: 400 },
    });
  });
  afterEach(async () => {
    await h.expectNoViolations();
  });
  afterAll(async () => {
    await h.close();
  });

  it("a missing or unknown key is a 401, and another tenant's response is a 404, in OpenAI's shape", async () => {
    const missing = await fetch(`${h.url}/v1/models`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({
      error: { message: expect.any(String), type: "authentication_error", param: null, code: "invalid_api_key" },
    });
    expect(await clientOf("key-nope").models.list().catch((error: unknown) => error)).toBeInstanceOf(OpenAI.AuthenticationError);

    const a = clientOf("key-a");
    const b = clientOf("key-b");
    const created = await a.responses.create({ model: "chat", input: "Mine", background: true, metadata: { ticket: "42" } });
    expect(created.metadata).toEqual({ ticket: "42" });
    expect((await a.responses.retrieve(created.id)).metadata).toEqual({ ticket: "42" });
    expect(await b.responses.retrieve(created.id).catch((error: unknown) => error)).toBeInstanceOf(OpenAI.NotFoundError);
    expect(await b.responses.cancel(created.id).catch((error: unknown) => error)).toBeInstanceOf(OpenAI.NotFoundError);
    const follow = await b.responses.create({ model: "chat", input: "Theirs", previous_response_id: created.id }).catch((error: unknown) => error);
    expect(follow).toBeInstanceOf(OpenAI.NotFoundError);
    expect((await a.responses.cancel(created.id)).status).toBe("cancelled");
    expect((await a.responses.retrieve(created.id)).metadata).toEqual({ ticket: "42" });
  });

  it("without background, a client that goes away mid-stream stops the run (after the grace period), publishing nothing", async () => {
    const stream = await clientOf("key-a").responses.create({ model: "chat", input: "Leave early", stream: true });
    let responseId = "";
    for await (const event of stream) {
      if (event.type === "response.created") responseId = event.response.id;
      if (event.type === "response.output_text.delta") break;
    }
    const ended = await h.tidemark.runtime.waitForTerminal("tenant-a", runIdOf(responseId), 20_000);
    expect(ended).toMatchObject({ status: "cancelled", cancelReason: "client_disconnected" });
    const response = await clientOf("key-a").responses.retrieve(responseId);
    expect(response).toMatchObject({ status: "cancelled", output: [], background: false });
  });

  it("a stream whose buffer expired answers 410 in OpenAI's shape; the response itself is still there", async () => {
    const a = clientOf("key-a");
    const created = await a.responses.create({ model: "chat", input: "Soon gone", background: true });
    await a.responses.cancel(created.id);
    const expired = await eventually(async () => {
      const error = await a.responses.retrieve(created.id, { stream: true }).then(
        (stream) => {
          stream.controller.abort();
          throw new Error("the stream is still there");
        },
        (error: unknown) => error,
      );
      expect(error).toBeInstanceOf(OpenAI.APIError);
      return error as InstanceType<typeof OpenAI.APIError>;
    }, { what: "the buffer to expire" });
    expect(expired.status).toBe(410);
    expect(expired.error).toMatchObject({ type: "invalid_request_error", code: "stream_expired" });
    expect((await a.responses.retrieve(created.id)).status).toBe("cancelled");
  });
});
