/**
 * The test provider over real HTTP with a plain client (`fetch` + `eventsource-parser`): the exact
 * OpenAI wire format, tool calls, failures, and the timings that prove a Stop closed the upstream.
 */
import { createParser } from "eventsource-parser";
import { afterEach, describe, expect, it } from "vitest";
import { startTestProvider, type TestProvider, type TestProviderScenario } from "./openai-test-provider.js";

const providers: TestProvider[] = [];

afterEach(async () => {
  for (const provider of providers.splice(0)) await provider.close();
});

async function start(scenario: TestProviderScenario): Promise<TestProvider> {
  const provider = await startTestProvider({ scenario });
  providers.push(provider);
  return provider;
}

interface ChatOptions {
  token?: string;
  signal?: AbortSignal;
}

function chat(provider: TestProvider, body: Record<string, unknown> = {}, options: ChatOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { "content-type": "application/json", authorization: "Bearer sk-test" };
  if (options.token !== undefined) headers["x-request-id"] = options.token;
  return fetch(`${provider.url}/chat/completions`, {
    method: "POST",
    headers,
    body: JSON.stringify({ model: "test-model", messages: [{ role: "user", content: "hello there" }], stream: true, ...body }),
    signal: options.signal,
  });
}

function cancel(provider: TestProvider, token: string, via: "body" | "header" = "body"): Promise<Response> {
  return fetch(provider.cancelUrl, {
    method: "POST",
    headers: via === "header" ? { "x-request-id": token } : { "content-type": "application/json" },
    body: via === "body" ? JSON.stringify({ request_id: token }) : undefined,
  });
}

/** Reads the `data` of each SSE event as it arrives; `next()` gives undefined at the end. */
function readSse(response: Response): { next(): Promise<string | undefined> } {
  const pending: string[] = [];
  const parser = createParser({ onEvent: (event) => pending.push(event.data) });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  return {
    async next() {
      while (pending.length === 0) {
        const { done, value } = await reader.read();
        if (done) return undefined;
        parser.feed(decoder.decode(value, { stream: true }));
      }
      return pending.shift();
    },
  };
}

async function readAll(response: Response): Promise<string[]> {
  const events = readSse(response);
  const all: string[] = [];
  for (let data = await events.next(); data !== undefined; data = await events.next()) all.push(data);
  return all;
}

/** Reads until `count` content deltas (the role chunk excluded) arrived. */
async function readContentChunks(events: { next(): Promise<string | undefined> }, count: number): Promise<void> {
  let seen = 0;
  while (seen < count) {
    const data = await events.next();
    if (data === undefined) throw new Error("stream ended early");
    const delta = JSON.parse(data).choices[0].delta;
    if (typeof delta.content === "string" && delta.content !== "") seen++;
  }
}

describe("wire format", () => {
  it("streams a short answer byte for byte like OpenAI", async () => {
    const provider = await start({ chunks: 2, intervalMs: 0 });
    const messages = [
      { role: "system", content: "be brief" },
      { role: "user", content: [{ type: "text", text: "hello  there\nworld" }] },
    ];
    const response = await chat(provider, { messages, stream_options: { include_usage: true } }, { token: "token-1" });

    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const text = await response.text();
    const created = /"created":(\d+)/.exec(text)![1];
    const head = `"id":"chatcmpl-1","object":"chat.completion.chunk","created":${created},"model":"test-model"`;
    expect(text).toBe(
      `data: {${head},"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n` +
        `data: {${head},"choices":[{"index":0,"delta":{"content":"w0 "},"finish_reason":null}]}\n\n` +
        `data: {${head},"choices":[{"index":0,"delta":{"content":"w1 "},"finish_reason":null}]}\n\n` +
        `data: {${head},"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n` +
        `data: {${head},"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}\n\n` +
        "data: [DONE]\n\n",
    );

    const record = await provider.waitForRequest(1);
    await record.closed;
    expect(record).toMatchObject({ id: 1, token: "token-1", model: "test-model", authorization: "Bearer sk-test", status: 200, cancelCalls: 0 });
    expect((record.body as any).messages).toEqual(messages);
    expect(record.chunkTimes).toHaveLength(2);
    expect(record.socketClosedAt).toBeGreaterThanOrEqual(record.chunkTimes[1]!);
  });

  it("parses as SSE: one id, the role first, finish_reason last, then usage and [DONE]", async () => {
    const provider = await start({ chunks: 3, intervalMs: 1 });
    const events = await readAll(await chat(provider, { stream_options: { include_usage: true } }));

    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((data) => JSON.parse(data));
    expect(new Set(chunks.map((chunk) => chunk.id))).toEqual(new Set(["chatcmpl-1"]));
    expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" });
    expect(chunks.slice(1, 4).map((chunk) => chunk.choices[0].delta.content).join("")).toBe("w0 w1 w2 ");
    expect(chunks.slice(0, 4).every((chunk) => chunk.choices[0].finish_reason === null)).toBe(true);
    expect(chunks[4].choices[0]).toEqual({ index: 0, delta: {}, finish_reason: "stop" });
    expect(chunks[5]).toMatchObject({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 } });
  });

  it("sends usage only when asked and enabled", async () => {
    const provider = await start({ chunks: 1, intervalMs: 0 });
    expect((await readAll(await chat(provider))).some((data) => data.includes("usage"))).toBe(false);
    provider.setScenario({ chunks: 1, intervalMs: 0, usage: false });
    const events = await readAll(await chat(provider, { stream_options: { include_usage: true } }));
    expect(events.some((data) => data.includes("usage"))).toBe(false);
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("streams many chunks with no interval", async () => {
    const provider = await start({ chunks: 5_000, intervalMs: 0 });
    const events = await readAll(await chat(provider));
    expect(events).toHaveLength(1 + 5_000 + 1 + 1);
    expect(provider.requests[0]!.chunkTimes).toHaveLength(5_000);
  });

  it("answers a non-streaming request with one chat.completion", async () => {
    const provider = await start({ chunks: 3, intervalMs: 0 });
    const response = await chat(provider, { stream: false });
    expect(response.headers.get("content-type")).toBe("application/json");
    expect(await response.json()).toEqual({
      id: "chatcmpl-1",
      object: "chat.completion",
      created: expect.any(Number),
      model: "test-model",
      choices: [{ index: 0, message: { role: "assistant", content: "w0 w1 w2 " }, finish_reason: "stop" }],
      usage: { prompt_tokens: 2, completion_tokens: 3, total_tokens: 5 },
    });
    expect(provider.requests[0]).toMatchObject({ status: 200, chunkTimes: [expect.any(Number), expect.any(Number), expect.any(Number)] });
  });

  it("answers unknown paths and bad bodies with JSON errors", async () => {
    const provider = await start({});
    const unknown = await fetch(`${provider.url}/models`);
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error.code).toBe("not_found");

    const bad = await fetch(`${provider.url}/chat/completions`, { method: "POST", body: "{not json" });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.type).toBe("invalid_request_error");
    expect(provider.requests[0]).toMatchObject({ id: 1, status: 400, body: undefined });
  });
});

describe("tool calls", () => {
  it("streams tool calls in OpenAI's delta format with arguments over several chunks", async () => {
    const toolCalls = [
      { name: "get_weather", arguments: '{"city":"Oslo"}' },
      { name: "lookup", arguments: '{"q":"tides"}' },
    ];
    const provider = await start({ chunks: 1, intervalMs: 0, toolCalls });
    const events = await readAll(await chat(provider));

    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((data) => JSON.parse(data));
    const calls = new Map<number, { id: string; type: string; name: string; arguments: string; chunks: number }>();
    for (const chunk of chunks) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        const call = calls.get(delta.index) ?? { id: delta.id, type: delta.type, name: delta.function.name, arguments: "", chunks: 0 };
        call.arguments += delta.function.arguments;
        call.chunks++;
        calls.set(delta.index, call);
      }
    }
    expect([...calls.values()]).toEqual([
      { id: "call_1", type: "function", name: "get_weather", arguments: '{"city":"Oslo"}', chunks: 3 },
      { id: "call_2", type: "function", name: "lookup", arguments: '{"q":"tides"}', chunks: 3 },
    ]);
    expect(chunks.at(-1).choices[0]).toEqual({ index: 0, delta: {}, finish_reason: "tool_calls" });
    expect(provider.requests[0]!.chunkTimes).toHaveLength(1 + 2 * 3);
  });

  it("returns whole tool calls in a non-streaming answer", async () => {
    const provider = await start({ chunks: 0, toolCalls: [{ name: "get_weather", arguments: "{}" }] });
    const body = await (await chat(provider, { stream: false })).json();
    expect(body.choices[0]).toEqual({
      index: 0,
      message: { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }] },
      finish_reason: "tool_calls",
    });
  });
});

describe("failures", () => {
  it("fails with 429 and Retry-After once, then succeeds", async () => {
    const provider = await start({ chunks: 1, intervalMs: 0, failWith: { status: 429, times: 1, retryAfterSeconds: 2 } });

    const failed = await chat(provider);
    expect(failed.status).toBe(429);
    expect(failed.headers.get("retry-after")).toBe("2");
    expect((await failed.json()).error).toMatchObject({ message: "secret upstream detail", type: "rate_limit_exceeded" });

    const succeeded = await chat(provider);
    expect(succeeded.status).toBe(200);
    expect((await readAll(succeeded)).at(-1)).toBe("[DONE]");
    expect(provider.requests.map((record) => record.status)).toEqual([429, 200]);

    // A new scenario restarts the count.
    provider.setScenario({ failWith: { status: 500, body: "upstream exploded" } });
    const custom = await chat(provider);
    expect(custom.status).toBe(500);
    expect(await custom.text()).toBe("upstream exploded");
  });

  it("resets the connection before the first chunk", async () => {
    const provider = await start({ chunks: 1, intervalMs: 0, resetBeforeFirstChunk: { times: 1 } });

    await expect(chat(provider)).rejects.toThrow();
    const record = await provider.waitForRequest(1);
    await record.closed;
    expect(record).toMatchObject({ status: 0, chunkTimes: [] });

    expect((await chat(provider)).status).toBe(200);
  });

  it("drops the connection mid-stream after the given chunks", async () => {
    const provider = await start({ chunks: 10, intervalMs: 0, failMidStream: { afterChunks: 3 } });
    const response = await chat(provider);
    expect(response.status).toBe(200);

    const events = readSse(response);
    const received: string[] = [];
    const reading = (async () => {
      for (let data = await events.next(); data !== undefined; data = await events.next()) received.push(data);
    })();
    await expect(reading).rejects.toThrow();
    expect(received.map((data) => JSON.parse(data).choices[0].delta.content)).toEqual(["", "w0 ", "w1 ", "w2 "]);
    expect(provider.requests[0]!.chunkTimes).toHaveLength(3);
  });
});

describe("stop and cancel", () => {
  it("a client abort closes the upstream socket and no chunk follows it", async () => {
    const provider = await start({ chunks: 10_000, intervalMs: 2 });
    const controller = new AbortController();
    const response = await chat(provider, {}, { signal: controller.signal });
    await readContentChunks(readSse(response), 3);
    controller.abort();

    const record = await provider.waitForRequest(1);
    await record.closed;
    expect(record.socketClosedAt).toBeGreaterThan(record.startedAt);
    const count = record.chunkTimes.length;
    expect(count).toBeGreaterThanOrEqual(3);
    expect(count).toBeLessThan(10_000);
    expect(provider.chunksAfter(record, record.socketClosedAt!)).toBe(0);
    // Generation has ended for good: waiting for one more chunk is refused, not left hanging.
    await expect(provider.waitForChunks(record, count + 1)).rejects.toThrow(/ended with/);
    expect(record.chunkTimes).toHaveLength(count);

    expect(provider.chunksAfter(record, record.startedAt)).toBe(count);
    expect(provider.chunksAfter(record, record.chunkTimes[1]!)).toBe(count - 2);
  });

  it("gateway mode keeps generating after a disconnect until the cancel call", async () => {
    const provider = await start({ chunks: 100_000, intervalMs: 1, ignoreDisconnect: true });
    const controller = new AbortController();
    const response = await chat(provider, {}, { token: "gateway-1", signal: controller.signal });
    await readContentChunks(readSse(response), 2);
    controller.abort();

    const record = await provider.waitForRequest(1);
    await record.closed;
    const atClose = record.chunkTimes.length;
    await provider.waitForChunks(record, atClose + 5);
    expect(provider.chunksAfter(record, record.socketClosedAt!)).toBeGreaterThanOrEqual(5);

    const cancelled = await cancel(provider, "gateway-1");
    expect(cancelled.status).toBe(200);
    expect(await cancelled.json()).toEqual({ status: "cancelled" });
    const afterCancel = record.chunkTimes.length;
    expect(afterCancel).toBeLessThan(100_000);
    expect(record.cancelCalls).toBe(1);
    await expect(provider.waitForChunks(record, afterCancel + 1)).rejects.toThrow(/ended with/);

    const again = await cancel(provider, "gateway-1", "header");
    expect(await again.json()).toEqual({ status: "already_finished" });
    expect(record.cancelCalls).toBe(2);
    const unknown = await cancel(provider, "nobody");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ status: "unknown" });
  });

  it("answers 499 to a cancel that arrives before the headers", async () => {
    const provider = await start({ chunks: 1, intervalMs: 60_000, answer499OnCancel: true });
    const pending = chat(provider, {}, { token: "slow-1" });
    await provider.waitForRequest(1);

    expect(await (await cancel(provider, "slow-1", "header")).json()).toEqual({ status: "cancelled" });
    const response = await pending;
    expect(response.status).toBe(499);
    expect((await response.json()).error).toMatchObject({ code: 499 });
    expect(provider.requests[0]).toMatchObject({ status: 499, chunkTimes: [], cancelCalls: 1 });
  });

  it("ends a running stream with a 499 error event on cancel", async () => {
    const provider = await start({ chunks: 100_000, intervalMs: 1, answer499OnCancel: true });
    const response = await chat(provider, {}, { token: "stream-1" });
    const events = readSse(response);
    await readContentChunks(events, 2);

    expect(await (await cancel(provider, "stream-1")).json()).toEqual({ status: "cancelled" });
    const rest: string[] = [];
    for (let data = await events.next(); data !== undefined; data = await events.next()) rest.push(data);
    expect(rest).not.toContain("[DONE]");
    expect(JSON.parse(rest.at(-1)!)).toEqual({ error: { message: "Request cancelled", type: "cancelled", code: 499 } });
    expect(provider.requests[0]!.status).toBe(200);
  });

  it("a plain cancel ends the stream without finish_reason or [DONE]", async () => {
    const provider = await start({ chunks: 100_000, intervalMs: 1 });
    const response = await chat(provider, {}, { token: "plain-1" });
    const events = readSse(response);
    await readContentChunks(events, 1);

    expect(await (await cancel(provider, "plain-1")).json()).toEqual({ status: "cancelled" });
    const rest: string[] = [];
    for (let data = await events.next(); data !== undefined; data = await events.next()) rest.push(data);
    expect(rest.every((data) => JSON.parse(data).choices[0].finish_reason === null)).toBe(true);
  });
});

describe("lifecycle", () => {
  it("waits for a request that has not arrived yet", async () => {
    const provider = await start({ chunks: 1, intervalMs: 0 });
    const second = provider.waitForRequest(2);
    await (await chat(provider, {}, { token: "a" })).text();
    await (await chat(provider, {}, { token: "b" })).text();
    expect((await second).token).toBe("b");
  });

  it("close ends open streams and rejects pending waits", async () => {
    const provider = await startTestProvider({ scenario: { chunks: 100_000, intervalMs: 1 } });
    const response = await chat(provider);
    const events = readSse(response);
    await readContentChunks(events, 1);
    const third = provider.waitForRequest(3);

    await provider.close();
    await expect(third).rejects.toThrow(/closed/);
    await provider.requests[0]!.closed;
    await expect((async () => {
      while ((await events.next()) !== undefined);
    })()).rejects.toThrow();
  });
});
