/**
 * Real model providers over real HTTP: the test provider speaks the OpenAI chat-completions
 * streaming format, and both the lean reader and the AI SDK's own provider read from it.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createId } from "../src/core/index.js";
import { createOpenAICompatibleModel, fromAISDKModel, withRetries } from "../src/models/index.js";
import { CANCELLED_BEFORE_EXECUTION, type ChatModel } from "../src/runtime/index.js";
import { startTestProvider, type RecordedRequest, type TestProvider } from "../src/testing/index.js";
import { eventually } from "./support/eventually.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";
import { runningRunOn } from "./support/store-fixtures.js";

const API_KEY = "sk-test-secret-key-123";

function leanModel(provider: TestProvider, extra: Partial<Parameters<typeof createOpenAICompatibleModel>[0]> = {}): ChatModel {
  return withRetries(createOpenAICompatibleModel({ model: "test-model", baseURL: provider.url, apiKey: API_KEY, ...extra }), { baseDelayMs: 5 });
}

function aiSdkModel(provider: TestProvider, extra: { cancel?: { url: string } } = {}): ChatModel {
  const openaiCompatible = createOpenAICompatible({ name: "test-provider", baseURL: provider.url, apiKey: API_KEY, includeUsage: true });
  return withRetries(fromAISDKModel(openaiCompatible.chatModel("test-model"), extra), { baseDelayMs: 5 });
}

const MODEL_PATHS = [
  ["the lean OpenAI-compatible reader", leanModel],
  ["the AI SDK's own openai-compatible provider", aiSdkModel],
] as const;

/** The next streaming request after the first `seen` requests (title requests do not stream). */
async function nextStreamRequest(provider: TestProvider, seen: number): Promise<RecordedRequest> {
  for (let n = seen + 1; ; n++) {
    const request = await provider.waitForRequest(n);
    if ((request.body as { stream?: boolean }).stream) return request;
  }
}

/** The thread once its title is saved (the title is written in the background, in its own transaction). */
function waitForTitle(h: Harness, threadId: string): Promise<any> {
  return eventually(
    async () => {
      const thread = (await h.api(`/v1/threads/${threadId}`)).body;
      if (thread.title === null) throw new Error(`thread ${threadId} has no title yet`);
      return thread;
    },
    { what: `a title for ${threadId}` },
  );
}

/** How many streaming requests the provider has seen. */
const streamRequestCount = (provider: TestProvider): number =>
  provider.requests.filter((request) => (request.body as { stream?: boolean }).stream).length;

/** Starts a run, waits for `chunks` provider chunks, presses Stop and returns what happened. */
async function stopAfterChunks(h: Harness, provider: TestProvider, chunks: number) {
  const requestsBefore = provider.requests.length;
  const threadId = await h.createThread();
  const run = await h.startRun(threadId, "Tell me a long story");
  const request = await nextStreamRequest(provider, requestsBefore);
  await provider.waitForChunks(request, chunks);
  const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST" });
  await request.closed;
  return { threadId, run, request, cancel };
}

describe.each(MODEL_PATHS)("Stop through %s", (_name, makeModel) => {
  let provider: TestProvider;
  let h: Harness;
  beforeAll(async () => {
    provider = await startTestProvider({ scenario: { chunks: 400, intervalMs: 5 } });
    h = await startHarness({ model: makeModel(provider) });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    await provider.close();
  });

  it("closes the upstream request at once: the socket is closed, the run cancelled, nothing published", async () => {
    const { threadId, run, request, cancel } = await stopAfterChunks(h, provider, 20);
    expect(cancel.status).toBe(200);
    expect(cancel.body.status).toBe("cancelled");
    // The Stop closed the upstream mid-answer: the provider saw its socket close before its last chunk.
    expect(request.socketClosedAt).toBeDefined();
    expect(provider.chunksAfter(request, request.socketClosedAt!)).toBe(0);
    expect(request.chunkTimes.length).toBeLessThan(400);
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages.map((message: any) => message.role)).toEqual(["user"]);
    const events = await h.events(run.run_id, { after: 0 });
    const types = events.map((event) => event.type);
    expect(types).not.toContain("message.published");
    // Whatever the provider still sent after the Stop was accepted never reached the stream.
    expect(types.indexOf("run.cancel_requested")).toBeGreaterThan(0);
    expect(types.slice(types.indexOf("run.cancel_requested"))).not.toContain("message.delta");
    expect(events.at(-1)).toMatchObject({ type: "run.cancelled", discarded_stream_chars: deltaText(events).length });
    // The request carried the key; nothing about it reaches the client.
    expect(request.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it("publishes a completed answer with the provider's own usage, and names the thread", async () => {
    provider.setScenario({ chunks: 12, intervalMs: 0 });
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Say twelve words please");
    const events = await h.events(run.run_id);
    expect(events.at(-1)!.type).toBe("run.completed");
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages[1]).toMatchObject({ role: "assistant", content: deltaText(events) });
    expect(deltaText(events)).toBe(Array.from({ length: 12 }, (_, index) => `w${index} `).join(""));
    const thread = await h.api(`/v1/threads/${threadId}`);
    expect(thread.body.stats).toMatchObject({ output_tokens: 12, tokens_estimated: false, llm_call_count: 1 });
    expect(thread.body.stats.input_tokens).toBeGreaterThan(0);
    expect((await waitForTitle(h, threadId)).title).toEqual(expect.stringMatching(/^w0/));
    provider.setScenario({ chunks: 400, intervalMs: 5 });
  });
});

describe.each(MODEL_PATHS)("a model read directly through %s", (_name, makeModel) => {
  it("closes the upstream request when the consumer stops reading, even without an abort", async () => {
    const provider = await startTestProvider({ scenario: { chunks: 1_000, intervalMs: 5 } });
    try {
      const model = makeModel(provider);
      let parts = 0;
      for await (const part of model.stream({ messages: [{ role: "user", content: "go" }] }, { signal: new AbortController().signal })) {
        if (part.type === "text-delta" && ++parts === 5) break;
      }
      const request = provider.requests[0]!;
      await request.closed;
      expect(request.chunkTimes.length).toBeLessThan(1_000);
    } finally {
      await provider.close();
    }
  });
});

describe.each(MODEL_PATHS)("provider behaviour through %s", (_name, makeModel) => {
  let provider: TestProvider;
  let h: Harness;
  beforeAll(async () => {
    provider = await startTestProvider({ scenario: { chunks: 10, intervalMs: 0 } });
    h = await startHarness({ model: makeModel(provider) });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    await provider.close();
  });

  async function runToEnd(content = "hello") {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, content);
    const events = await h.events(run.run_id);
    const status = (await h.api(`/v1/runs/${run.run_id}`)).body;
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    return { threadId, run, events, status, history };
  }

  it("retries 429 and a reset connection before the first chunk, then completes", async () => {
    provider.setScenario({ chunks: 5, intervalMs: 0, failWith: { status: 429, times: 2, retryAfterSeconds: 0 } });
    const before = provider.requests.length;
    const first = await runToEnd();
    expect(first.status.status).toBe("completed");
    // The title request may take one of the scripted 429s; the stream retried through the rest.
    const statuses = provider.requests
      .slice(before)
      .filter((request) => (request.body as { stream?: boolean }).stream)
      .map((request) => request.status);
    expect(statuses.at(-1)).toBe(200);
    expect(statuses.slice(0, -1)).toEqual(expect.arrayContaining([429]));
    expect(statuses.slice(0, -1).every((status) => status === 429)).toBe(true);
    provider.setScenario({ chunks: 5, intervalMs: 0, resetBeforeFirstChunk: { times: 1 } });
    const second = await runToEnd();
    expect(second.status.status).toBe("completed");
    expect(second.history.messages).toHaveLength(2);
  });

  it("fails a non-retryable error with a safe message: no key, no upstream body", async () => {
    provider.setScenario({ chunks: 5, failWith: { status: 401, body: '{"error":{"message":"secret upstream detail for sk-test-secret-key-123"}}' } });
    const before = streamRequestCount(provider);
    const result = await runToEnd();
    expect(streamRequestCount(provider) - before).toBe(1);
    expect(result.status).toMatchObject({ status: "failed", failure_reason: "provider_error" });
    const everything = JSON.stringify([result.status, result.events, result.history]);
    expect(everything).not.toContain("secret");
    expect(everything).not.toContain(API_KEY);
    expect(result.events.at(-1)).toMatchObject({ type: "run.failed", reason: "provider_error", message: "The model provider answered HTTP 401 (the API key is missing or was refused)." });
    expect(result.history.messages).toHaveLength(1);
    // The title request failed too: the thread is still named, from the first words.
    const thread = await waitForTitle(h, result.threadId);
    expect(thread.title).toBe("hello");
  });

  it("a failure mid-stream publishes nothing and counts the discarded generation", async () => {
    provider.setScenario({ chunks: 50, intervalMs: 0, failMidStream: { afterChunks: 5 } });
    const result = await runToEnd();
    expect(result.status).toMatchObject({ status: "failed", failure_reason: "provider_error" });
    expect(result.history.messages).toHaveLength(1);
    expect(deltaText(result.events).length).toBeGreaterThan(0);
    const thread = (await h.api(`/v1/threads/${result.threadId}`)).body;
    expect(thread.stats).toMatchObject({ discarded_generation_count: 1, tokens_estimated: true });
    expect(thread.stats.discarded_stream_chars).toBe(deltaText(result.events).length);
  });

  it("an HTTP 499 from the provider means cancelled, not failed", async () => {
    provider.setScenario({ chunks: 5, failWith: { status: 499 } });
    const result = await runToEnd();
    expect(result.status).toMatchObject({ status: "cancelled", cancel_reason: "provider_cancelled", failure_reason: null });
    expect(result.events.map((event) => event.type)).toContain("run.cancel_requested");
  });

  it("tool calls: the call and a truthful result are published, then the model continues with both in context", async () => {
    provider.setScenario({ chunks: 3, intervalMs: 0, toolCalls: [{ name: "search_catalog", arguments: '{"query":"red shoes"}' }] });
    const before = provider.requests.length;
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "search for red shoes");
    const first = await nextStreamRequest(provider, before);
    provider.setScenario({ chunks: 4, intervalMs: 0 });
    const events = await h.events(run.run_id);
    expect(events.at(-1)!.type).toBe("run.completed");
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    expect(history.map((message: any) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    const call = history[1].tool_calls[0];
    expect(call).toMatchObject({ tool_name: "search_catalog", input: '{"query":"red shoes"}' });
    expect(history[2]).toMatchObject({ tool_call_id: call.tool_call_id, tool_name: "search_catalog" });
    expect(history[2].content).toMatch(/No tool named "search_catalog"/);
    const second = (await nextStreamRequest(provider, provider.requests.indexOf(first) + 1)).body as { messages: any[] };
    expect(second.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    expect(second.messages[1].tool_calls[0].id).toBe(call.tool_call_id);
    expect(second.messages[2].tool_call_id).toBe(call.tool_call_id);
    const thread = (await h.api(`/v1/threads/${threadId}`)).body;
    expect(thread.stats).toMatchObject({ llm_call_count: 2, tool_call_count: 1, message_count: 4 });
  });

  it("a tool call left without a result by a Stop gets an explicit result in the next request", async () => {
    const store = h.tidemark.store;
    const thread = await h.tidemark.runtime.createThread("local");
    const running = await runningRunOn(store, thread.threadId, "email the quote");
    await store.publishMessage({
      tenantId: "local",
      runId: running.runId,
      messageId: createId("msg"),
      checkpointId: createId("cp"),
      role: "assistant",
      content: "",
      toolCalls: [{ toolCallId: "call_orphan", toolName: "send_email", input: "{}" }],
      completedStepId: "model-1",
      stats: {},
      complete: false,
      now: Date.now(),
    });
    // As the runtime records a Stop that caught the tool step in progress.
    await store.requestCancel({
      tenantId: "local",
      runId: running.runId,
      reason: "user",
      checkpointId: createId("cp"),
      pendingStep: { stepId: "model-1/call_orphan", kind: "tool", inputHash: "h" },
      now: Date.now(),
    });
    await store.finishRun({ tenantId: "local", runId: running.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: Date.now() });

    provider.setScenario({ chunks: 3, intervalMs: 0 });
    const before = provider.requests.length;
    const run = await h.startRun(thread.threadId, "so did it send?");
    expect((await h.events(run.run_id)).at(-1)!.type).toBe("run.completed");
    const body = (await nextStreamRequest(provider, before)).body as { messages: any[] };
    // The run was stopped: the model is told so (a system note) right before the new input.
    expect(body.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "system", "user"]);
    expect(body.messages[2]).toMatchObject({ tool_call_id: "call_orphan", content: CANCELLED_BEFORE_EXECUTION });
  });
});

describe.each(MODEL_PATHS)("explicit provider cancel for gateways that keep generating, through %s", (_name, makeModel) => {
  let provider: TestProvider;
  let h: Harness;
  beforeAll(async () => {
    provider = await startTestProvider({ scenario: { chunks: 2_000, intervalMs: 5, ignoreDisconnect: true } });
    h = await startHarness({ model: makeModel(provider, { cancel: { url: `${provider.url}/cancel` } }) });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    await provider.close();
  });

  it("calls the cancel URL with the request's token on Stop, and the gateway stops", async () => {
    const { request, cancel } = await stopAfterChunks(h, provider, 10);
    expect(cancel.body.status).toBe("cancelled");
    expect(request.token).toEqual(expect.any(String));
    // The gateway answers the cancel only once its generation has stopped.
    await expect(provider.waitForChunks(request, 2_000)).rejects.toThrow();
    expect(request.cancelCalls).toBe(1);
    expect(request.chunkTimes.length).toBeLessThan(2_000);
  });
});
