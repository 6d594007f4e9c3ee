/**
 * The limits' refusals on the compatibility layers (issue 17, items 1 and 5), each in the layer's
 * own error shape with `Retry-After` kept, read through the layers' real clients where they show
 * it: OpenAI's `{error: {message, type, param, code}}` (the `openai` client's `APIError`), the
 * Agent Server's `{detail, error}` (the LangGraph SDK's `HTTPError`), and AG-UI's, which answers
 * every error in the native `{error, message}` (the `HttpAgent` hands it over as `payload`).
 */
import { HttpAgent } from "@ag-ui/client";
import { Client } from "@langchain/langgraph-sdk";
import { randomUUID } from "node:crypto";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "./support/harness.js";
import { createHeldModel } from "./support/held-model.js";

const KEYS = new Map([
  ["key-openai", "tenant-openai"],
  ["key-langgraph", "tenant-langgraph"],
  ["key-ag-ui", "tenant-ag-ui"],
]);

const harnesses: Harness[] = [];
const readers = new AbortController();

afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    await h.expectNoViolations();
    await h.close();
  }
});

async function harnessWith(options: Parameters<typeof startHarness>[0]): Promise<Harness> {
  const h = await startHarness({ apiKeys: KEYS, ...options });
  harnesses.push(h);
  return h;
}

const openAiClient = (h: Harness) => new OpenAI({ baseURL: `${h.url}/v1`, apiKey: "key-openai", maxRetries: 0 });
const langGraphClient = (h: Harness) =>
  new Client({ apiUrl: `${h.url}/langgraph`, defaultHeaders: { authorization: "Bearer key-langgraph" }, callerOptions: { maxRetries: 0 } });

/** What a rejected promise rejected with. */
async function rejectionOf(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("it did not reject");
}

/** Starts a held run of `key`'s tenant on a new native thread. */
async function startHeldRun(h: Harness, key: string): Promise<{ threadId: string; runId: string }> {
  const threadId = await h.createThread(key);
  const created = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", key, json: { input: { role: "user", content: "hold it" } } });
  expect(created.status).toBe(201);
  return { threadId, runId: created.body.run_id as string };
}

/** Opens the run's native event stream and keeps it open (it holds the run's one stream slot). */
async function holdNativeStream(h: Harness, key: string, runId: string): Promise<void> {
  const response = await fetch(`${h.url}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${key}` }, signal: readers.signal });
  expect(response.status).toBe(200);
}

describe("limit refusals on the compatibility layers", () => {
  it("rate_limited: each layer answers 429 in its own shape, with Retry-After", async () => {
    const now = 1_000_000;
    const h = await harnessWith({ rateLimit: { requestsPerSecond: 1, burst: 2, now: () => now } });

    for (let i = 0; i < 2; i++) expect((await h.api("/v1/models", { key: "key-openai" })).status).toBe(200);
    const openAi = await h.api("/v1/models", { key: "key-openai" });
    expect(openAi.status).toBe(429);
    expect(openAi.headers.get("retry-after")).toBe("1");
    expect(openAi.body).toEqual({ error: { message: expect.any(String), type: "rate_limit_error", param: null, code: "rate_limited" } });
    const apiError = await rejectionOf(openAiClient(h).models.list());
    expect(apiError).toBeInstanceOf(OpenAI.APIError);
    expect(apiError).toMatchObject({ status: 429, code: "rate_limited", type: "rate_limit_error" });
    expect(apiError.headers.get("retry-after")).toBe("1");

    for (let i = 0; i < 2; i++) expect((await h.api("/langgraph/assistants/search", { method: "POST", key: "key-langgraph", json: {} })).status).toBe(200);
    const langGraph = await h.api("/langgraph/assistants/search", { method: "POST", key: "key-langgraph", json: {} });
    expect(langGraph.status).toBe(429);
    expect(langGraph.headers.get("retry-after")).toBe("1");
    expect(langGraph.body).toEqual({ detail: expect.any(String), error: "rate_limited", retry_after_s: 1 });
    const httpError = await rejectionOf(langGraphClient(h).assistants.search());
    expect(httpError.status).toBe(429);
    expect(JSON.parse(httpError.text)).toMatchObject({ error: "rate_limited", detail: expect.any(String) });

    const agUiBody = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: "m1", role: "user", content: "hi" }], tools: [], context: [] };
    for (let i = 0; i < 2; i++) expect((await h.api("/ag-ui/runs/run_01jd8x0f1ae2rbv7c9ks0d8m5q/cancel", { method: "POST", key: "key-ag-ui", json: {} })).status).toBe(404);
    const agUi = await h.api("/ag-ui", { method: "POST", key: "key-ag-ui", json: agUiBody });
    expect(agUi.status).toBe(429);
    expect(agUi.headers.get("retry-after")).toBe("1");
    expect(agUi.body).toMatchObject({ error: "rate_limited", message: expect.any(String), retry_after_s: 1 });
    const agentError = await rejectionOf(
      new HttpAgent({ url: `${h.url}/ag-ui`, threadId: randomUUID(), headers: { Authorization: "Bearer key-ag-ui" } }).runAgent(),
    );
    expect(agentError).toMatchObject({ status: 429, payload: { error: "rate_limited" } });
  });

  it("too_many_runs, too_many_streams and input_too_long: each layer's shape, Retry-After on the 429s", async () => {
    const held = createHeldModel();
    const h = await harnessWith({ model: held.model, limits: { maxActiveRunsPerTenant: 1, maxStreamsPerRun: 1, maxInputChars: 20 } });
    try {
      // OpenAI: its tenant's one active run is held, with its one stream open.
      const openAiRun = await startHeldRun(h, "key-openai");
      await holdNativeStream(h, "key-openai", openAiRun.runId);
      const openai = openAiClient(h);
      const tooManyRuns = await rejectionOf(openai.responses.create({ model: "chat", input: "another", background: true }));
      expect(tooManyRuns).toMatchObject({ status: 429, code: "too_many_runs", type: "rate_limit_error" });
      expect(tooManyRuns.headers.get("retry-after")).toBe("1");
      const responseId = `resp_${openAiRun.runId.slice("run_".length)}`;
      const tooManyStreams = await rejectionOf(openai.responses.retrieve(responseId, { stream: true }));
      expect(tooManyStreams).toMatchObject({ status: 429, code: "too_many_streams", type: "rate_limit_error" });
      expect(tooManyStreams.headers.get("retry-after")).toBe("1");
      const tooLong = await rejectionOf(openai.responses.create({ model: "chat", input: "y".repeat(21), background: true }));
      expect(tooLong).toMatchObject({ status: 413, code: "input_too_long", type: "invalid_request_error" });

      // LangGraph: the same, in the Agent Server's shape.
      const langGraphRun = await startHeldRun(h, "key-langgraph");
      await holdNativeStream(h, "key-langgraph", langGraphRun.runId);
      const langgraph = langGraphClient(h);
      const thread = await langgraph.threads.create();
      const human = (content: string) => ({ messages: [{ type: "human", content }] });
      const runsError = await rejectionOf(langgraph.runs.create(thread.thread_id, "chat", { input: human("another") }));
      expect(runsError.status).toBe(429);
      expect(JSON.parse(runsError.text)).toMatchObject({ detail: expect.any(String), error: "too_many_runs", queue: "active", limit: 1 });
      const rawRuns = await h.api(`/langgraph/threads/${thread.thread_id}/runs`, { method: "POST", key: "key-langgraph", json: { assistant_id: "chat", input: human("again") } });
      expect(rawRuns.status).toBe(429);
      expect(rawRuns.headers.get("retry-after")).toBe("1");
      const rawStream = await h.api(`/langgraph/threads/${langGraphRun.threadId}/runs/${langGraphRun.runId}/stream`, { key: "key-langgraph" });
      expect(rawStream.status).toBe(429);
      expect(rawStream.headers.get("retry-after")).toBe("1");
      expect(rawStream.body).toMatchObject({ detail: expect.any(String), error: "too_many_streams", scope: "run", limit: 1 });
      const longError = await rejectionOf(langgraph.runs.create(thread.thread_id, "chat", { input: human("y".repeat(21)) }));
      expect(longError.status).toBe(413);
      expect(JSON.parse(longError.text)).toMatchObject({ detail: expect.any(String), error: "input_too_long", limit: 20 });

      // AG-UI: its first run is its tenant's one active run; a repeat of its request would be a
      // second stream of it, and another run one too many.
      const agUiBody = { threadId: randomUUID(), runId: randomUUID(), messages: [{ id: "m1", role: "user", content: "hold on" }], tools: [], context: [] };
      const first = await fetch(`${h.url}/ag-ui`, {
        method: "POST",
        headers: { authorization: "Bearer key-ag-ui", "content-type": "application/json" },
        body: JSON.stringify(agUiBody),
        signal: readers.signal,
      });
      expect(first.status).toBe(200);
      const repeat = await h.api("/ag-ui", { method: "POST", key: "key-ag-ui", json: agUiBody });
      expect(repeat.status).toBe(429);
      expect(repeat.headers.get("retry-after")).toBe("1");
      expect(repeat.body).toMatchObject({ error: "too_many_streams", message: expect.any(String), scope: "run" });
      const agent = (content: string) =>
        new HttpAgent({ url: `${h.url}/ag-ui`, threadId: randomUUID(), headers: { Authorization: "Bearer key-ag-ui" }, initialMessages: [{ id: randomUUID(), role: "user", content }] });
      expect(await rejectionOf(agent("another").runAgent())).toMatchObject({ status: 429, payload: { error: "too_many_runs", queue: "active" } });
      const rawRuns429 = await h.api("/ag-ui", { method: "POST", key: "key-ag-ui", json: { ...agUiBody, threadId: randomUUID(), runId: randomUUID() } });
      expect(rawRuns429.headers.get("retry-after")).toBe("1");
      expect(await rejectionOf(agent("y".repeat(21)).runAgent())).toMatchObject({ status: 413, payload: { error: "input_too_long", limit: 20 } });
    } finally {
      readers.abort();
      held.release();
    }
  });
});
