/**
 * Structured output, honestly (issue 19 item 4), over a real server (a SQLite file, then a
 * PostgreSQL schema) and an
 * OpenAI-compatible provider over real HTTP: a step that must produce an order card publishes it
 * only complete and valid. A Stop at every chunk boundary of the object publishes nothing (not even
 * at the boundary where the whole text has arrived but the generation has not ended); "Save what I
 * saw" on it stores a fragment labelled not usable for execution, and an agent that would feed it
 * to a tool refuses it (`not_usable_for_execution`) before the tool runs. A complete object that
 * does not validate fails the step with `invalid_structured_output` and publishes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent } from "../src/agents/index.js";
import type { RunEvent } from "../src/core/index.js";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createDemoModel } from "../src/runtime/index.js";
import type { ChatModel } from "../src/core/model.js";
import { createOpenAICompatibleModel, fromAISDKModel } from "../src/models/index.js";
import { responseFormatFor } from "../src/runtime/structured-output.js";
import { OBJECT_FRAGMENT_LABEL } from "../src/runtime/model-context.js";
import { startTestProvider, type TestProvider } from "../src/testing/openai-test-provider.js";
import { defineTool } from "../src/tools/index.js";
import { startHarness, type Harness } from "./support/harness.js";

const orderCard = z.strictObject({
  item: z.string().min(1),
  quantity: z.number().int().positive(),
  delivery: z.enum(["standard", "express"]),
});

const ORDER = { item: "oak table", quantity: 2, delivery: "express" };
/** The order card as a model streams it: one chunk per token, so every boundary is a place to stop. */
const ORDER_CHUNKS = ['{"item"', ":", ' "oak', ' table"', ",", ' "quantity"', ":", " 2", ",", ' "delivery"', ":", ' "express"', "}"];

/** A step that asks the model for an order card and publishes it as the run's answer. */
const orderAgent = defineAgent({
  name: "order",
  steps: () => [
    {
      id: "order-card",
      run: async (step) => step.publish(await step.generateObject({ name: "order_card", schema: orderCard, messages: step.messages }), { final: true }),
    },
  ],
});

/** Orders placed by the tool: each one a real execution. */
const placed: unknown[] = [];
const placeOrder = defineTool({
  name: "place_order",
  description: "Places an order.",
  effect: "idempotent",
  input: orderCard,
  execute: async (order) => {
    placed.push(order);
    return `placed ${order.quantity} × ${order.item}`;
  },
});

/** A step that takes an order card from a message of the thread and hands it to the tool. */
const placeAgent = defineAgent({
  name: "place",
  configSchema: z.strictObject({ message_id: z.string().min(1).max(100) }),
  steps: ({ config }) => [
    {
      id: "place",
      run: async (step) => {
        const order = step.objectOf(config.message_id, orderCard);
        return step.callTool({ toolCallId: `place_${config.message_id}`, toolName: "place_order", input: JSON.stringify(order) });
      },
    },
  ],
});

/** The streamed (generation) requests the provider received after the first `from`. */
const generationRequests = (provider: TestProvider, from: number) => provider.requests.slice(from).filter((request) => (request.body as { stream?: boolean } | undefined)?.stream === true);

const deltasOf = (events: RunEvent[]) => events.filter((event): event is Extract<RunEvent, { type: "message.delta" }> => event.type === "message.delta");

describe.each(["sqlite", "postgres"] as const)("a structured step over HTTP (%s)", (storeKind) => {
  let provider: TestProvider;
  let h: Harness;
  beforeAll(async () => {
    provider = await startTestProvider({ scenario: { textChunks: ORDER_CHUNKS, intervalMs: 1 } });
    h = await startHarness({
      model: createOpenAICompatibleModel({ model: "test", baseURL: provider.url }),
      agents: [orderAgent, placeAgent],
      tools: [placeOrder],
      storeKind,
    });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    await provider.close();
  });

  /** Runs `place` on `messageId`; returns the run's view and steps once it has ended. */
  async function place(threadId: string, messageId: string) {
    const run = await h.startRun(threadId, "Place that order", { agent: "place", config: { message_id: messageId } });
    expect(run.run_id, JSON.stringify(run)).toBeDefined();
    await h.events(run.run_id);
    const view = (await h.api(`/v1/runs/${run.run_id}`)).body;
    const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
    return { view, step: steps[0] };
  }

  it("publishes a complete, valid object exactly once (format json), asked for as a json_schema response", async () => {
    provider.setScenario({ textChunks: ORDER_CHUNKS, intervalMs: 1 });
    const threadId = await h.createThread();
    const before = provider.requests.length;
    const run = await h.startRun(threadId, "An order card for two oak tables, express", { agent: "order" });
    const events = await h.events(run.run_id);

    expect(events.at(-1)?.type).toBe("run.completed");
    const deltas = deltasOf(events);
    expect(deltas.map((delta) => delta.text)).toEqual(ORDER_CHUNKS);
    expect(deltas.every((delta) => delta.format === "json")).toBe(true);
    const published = events.filter((event) => event.type === "message.published" && event.role === "assistant");
    expect(published).toHaveLength(1);
    // The generation's request (a thread's first run also asks for a title, unstreamed).
    const body = generationRequests(provider, before)[0]!.body as { response_format?: unknown };
    expect(body.response_format).toEqual({ type: "json_schema", json_schema: { name: "order_card", schema: expect.objectContaining({ type: "object" }) } });

    const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    const answers = history.filter((message: any) => message.role === "assistant");
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ format: "json", usable_for_execution: true, publication_status: "published" });
    expect(JSON.parse(answers[0].content)).toEqual(ORDER);

    // A published object is an input a tool may take: the order is placed once.
    const placedBefore = placed.length;
    const placedRun = await place(threadId, answers[0].message_id);
    expect(placedRun.view.status).toBe("completed");
    expect(placed.slice(placedBefore)).toEqual([ORDER]);
  });

  it("a Stop at every chunk boundary publishes nothing; the fragment saved is labelled not usable, and placing it is refused", async () => {
    // Boundary k: k chunks of the object streamed, then the provider holds (k = all: the whole
    // text arrived and parses, but the generation has not ended: still nothing is published).
    for (let k = 0; k <= ORDER_CHUNKS.length; k++) {
      provider.setScenario({ textChunks: ORDER_CHUNKS, intervalMs: 1, stallMidStream: { afterChunks: k } });
      const threadId = await h.createThread();
      const requests = provider.requests.length;
      const run = await h.startRun(threadId, "An order card for two oak tables, express", { agent: "order" });
      const seen =
        k === 0
          ? (await provider.waitForRequest(requests + 1), [])
          : deltasOf(await h.events(run.run_id, { until: untilDeltas(k) }));
      const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=10000`, { method: "POST", json: { reason: "user_pressed_stop" } });
      expect(cancel.body.status, `boundary ${k}`).toBe("cancelled");

      const events = await h.events(run.run_id, { after: 0 });
      expect(events.filter((event) => event.type === "message.published" && event.role === "assistant"), `boundary ${k}`).toEqual([]);
      const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
      expect(history.filter((message: any) => message.role === "assistant"), `boundary ${k}`).toEqual([]);
      const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
      expect(steps[0]).toMatchObject({ step_id: "order-card", status: "cancelled", message_id: null });
      if (k === 0) continue;

      // "Save what I saw": exactly the k chunks, labelled as an object's fragment, not usable.
      const lastSeq = seen.at(-1)!.seq;
      const saved = await h.api(`/v1/runs/${run.run_id}/fragments`, { method: "POST", json: { message_id: seen[0]!.message_id, last_seq: lastSeq } });
      expect(saved.status, `boundary ${k}`).toBe(201);
      expect(saved.body).toMatchObject({
        publication_status: "fragment",
        format: "json",
        usable_for_execution: false,
        content: ORDER_CHUNKS.slice(0, k).join(""),
      });

      // An agent given the fragment refuses it before any tool runs.
      const placedBefore = placed.length;
      const refused = await place(threadId, saved.body.message_id);
      expect(refused.view).toMatchObject({ status: "failed", failure_reason: "error" });
      expect(refused.view.failure_message).toMatch(/^not_usable_for_execution: /);
      expect(refused.step).toMatchObject({ status: "failed", error: expect.stringContaining("not_usable_for_execution") });
      expect(placed.length).toBe(placedBefore);
      const operations = (await h.api(`/v1/threads/${threadId}/operations`)).body.operations;
      expect(operations).toEqual([]);
    }
  });

  it("the next run's model sees an object's fragment labelled as not usable for execution", async () => {
    provider.setScenario({ textChunks: ORDER_CHUNKS, intervalMs: 1, stallMidStream: { afterChunks: 5 } });
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "An order card", { agent: "order" });
    const seen = deltasOf(await h.events(run.run_id, { until: untilDeltas(5) }));
    await h.api(`/v1/runs/${run.run_id}/cancel?wait=10000`, { method: "POST", json: { reason: "user_pressed_stop" } });
    const saved = await h.api(`/v1/runs/${run.run_id}/fragments`, { method: "POST", json: { message_id: seen[0]!.message_id, last_seq: seen.at(-1)!.seq } });
    expect(saved.status).toBe(201);

    provider.setScenario({ textChunks: ORDER_CHUNKS, intervalMs: 1 });
    const requests = provider.requests.length;
    const next = await h.startRun(threadId, "Try again", { agent: "order" });
    expect((await h.events(next.run_id)).at(-1)?.type).toBe("run.completed");
    const messages = (generationRequests(provider, requests)[0]!.body as { messages: { role: string; content: string }[] }).messages;
    expect(messages).toContainEqual({ role: "assistant", content: OBJECT_FRAGMENT_LABEL + ORDER_CHUNKS.slice(0, 5).join("") });
  });

  it("a Continue after a stopped object runs the structured step again and publishes one complete object", async () => {
    provider.setScenario({ textChunks: ORDER_CHUNKS, intervalMs: 1, stallMidStream: { afterChunks: 7 } });
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "An order card", { agent: "order" });
    await h.events(run.run_id, { until: untilDeltas(7) });
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=10000`, { method: "POST", json: { reason: "user_pressed_stop" } });
    expect(cancel.body.status).toBe("cancelled");
    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints;
    expect(checkpoints.at(-1)).toMatchObject({
      kind: "cancel_accepted",
      pending_step: { step_id: "order-card", kind: "model" },
      cancelled_generation: { discarded_stream_chars: ORDER_CHUNKS.slice(0, 7).join("").length },
    });

    provider.setScenario({ textChunks: ORDER_CHUNKS, intervalMs: 1 });
    const resumed = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { resume_from_checkpoint_id: cancel.body.resume_checkpoint_id, expected_state_version: cancel.body.accepted_state_version },
    });
    expect(resumed.status).toBe(201);
    const events = await h.events(resumed.body.run_id);
    expect(events.at(-1)?.type).toBe("run.completed");
    const answers = (await h.api(`/v1/threads/${threadId}/history`)).body.messages.filter((message: any) => message.role === "assistant");
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ run_id: resumed.body.run_id, format: "json", usable_for_execution: true });
    expect(JSON.parse(answers[0].content)).toEqual(ORDER);
  });

  it("a complete object that does not validate, or is not JSON, fails the step with invalid_structured_output and publishes nothing", async () => {
    const wrongShape = ['{"item": "oak table",', ' "quantity": "two",', ' "delivery": "express"}'];
    const prose = ["Sure! ", "Here is ", "your order."];
    for (const [chunks, problem] of [
      [wrongShape, /quantity/],
      [prose, /not one complete JSON object/],
    ] as const) {
      provider.setScenario({ textChunks: chunks, intervalMs: 1 });
      const threadId = await h.createThread();
      const run = await h.startRun(threadId, "An order card", { agent: "order" });
      const events = await h.events(run.run_id);

      expect(events.at(-1)).toMatchObject({ type: "run.failed", reason: "error", message: expect.stringMatching(/^invalid_structured_output: /) });
      expect(events.at(-1)).toMatchObject({ message: expect.stringMatching(problem) });
      // The model's text never reaches the failure message.
      expect(JSON.stringify(events.at(-1))).not.toContain("two");
      expect(events.filter((event) => event.type === "message.published" && event.role === "assistant")).toEqual([]);
      const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
      expect(history.filter((message: any) => message.role === "assistant")).toEqual([]);
      const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
      expect(steps[0]).toMatchObject({ status: "failed", error: expect.stringContaining("invalid_structured_output") });
    }
  });

  it("placing a text message (not an object) or an unknown message is refused with the same code", async () => {
    const threadId = await h.createThread();
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    expect(history).toEqual([]);
    const run = await h.startRun(threadId, "Place the order in my message", { agent: "place", config: { message_id: "msg_01jd8x0f1ae2rbv7c9ks0d8m5q" } });
    await h.events(run.run_id);
    const view = (await h.api(`/v1/runs/${run.run_id}`)).body;
    expect(view.failure_message).toMatch(/^not_usable_for_execution: .* is not in this thread's history/);

    const input = (await h.api(`/v1/threads/${threadId}/history`)).body.messages.find((message: any) => message.role === "user");
    const text = await place(threadId, input.message_id);
    expect(text.view.failure_message).toMatch(/^not_usable_for_execution: .* is text, not a structured step's object/);
  });

  it("refuses a config that is not the agent's with a 400 JSON error", async () => {
    const threadId = await h.createThread();
    for (const config of [{ message_id: "" }, { message_id: 7 }, { message_id: "msg_x", extra: true }]) {
      const response = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "Place" }, agent: "place", config } });
      expect(response.status, JSON.stringify(config)).toBe(400);
      expect(response.body.error).toBe("invalid_config");
    }
  });
});

/** A fresh `until` for the harness's stream: holds once `count` deltas have arrived. */
function untilDeltas(count: number): (event: RunEvent) => boolean {
  let seen = 0;
  return (event) => event.type === "message.delta" && ++seen === count;
}

describe("each model adapter asks for the object", () => {
  let provider: TestProvider;
  beforeAll(async () => {
    provider = await startTestProvider({ scenario: { textChunks: ORDER_CHUNKS, intervalMs: 0 } });
  });
  afterAll(async () => {
    await provider.close();
  });

  /** Streams one structured request through `model` and returns the text. */
  async function streamObject(model: ChatModel): Promise<string> {
    let text = "";
    const request = { messages: [{ role: "user" as const, content: "An order card" }], responseFormat: responseFormatFor(orderCard, "order_card") };
    for await (const part of model.stream(request, { signal: new AbortController().signal })) if (part.type === "text-delta") text += part.text;
    return text;
  }

  it.each([
    ["the lean reader", (url: string) => createOpenAICompatibleModel({ model: "test", baseURL: url })],
    ["an AI SDK model", (url: string) => fromAISDKModel(createOpenAICompatible({ name: "test", baseURL: url, supportsStructuredOutputs: true }).chatModel("test"))],
  ])("%s sends response_format json_schema with the schema's name", async (_name, create) => {
    const before = provider.requests.length;
    const text = await streamObject(create(provider.url));
    expect(JSON.parse(text)).toEqual(ORDER);
    const body = provider.requests[before]!.body as { response_format?: { type: string; json_schema?: { name: string; schema: unknown } } };
    expect(body.response_format).toMatchObject({ type: "json_schema", json_schema: { name: "order_card", schema: expect.objectContaining({ type: "object" }) } });
  });

  it("the demo model answers with an object of the schema, a piece at a time", async () => {
    const text = await streamObject(createDemoModel({ wordsPerSecond: 0 }));
    expect(orderCard.safeParse(JSON.parse(text)).success).toBe(true);
  });
});
