/**
 * A fake OpenAI chat-completions upstream over real HTTP, for integration tests and benchmarks that
 * must prove a Stop really closes the upstream request (not just hides it from the user).
 *
 * It speaks the streaming wire format closely enough for `@ai-sdk/openai-compatible` and a plain SSE
 * reader, records every request with timings (`chunkTimes`, `socketClosedAt`), and plays scenarios:
 * HTTP failures with `Retry-After`, resets, mid-stream failures, and a "gateway" that keeps
 * generating after the client left until its cancel endpoint is called.
 *
 * @example
 * ```ts
 * const provider = await startTestProvider({ scenario: { chunks: 1_000, intervalMs: 5 } });
 * // ... point an OpenAI-compatible client at provider.url, start a run, press Stop ...
 * const request = await provider.waitForRequest(1);
 * await request.closed;
 * expect(provider.chunksAfter(request, request.socketClosedAt!)).toBe(0);
 * await provider.close();
 * ```
 */
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";

/** What the provider does for the requests that follow `setScenario` (or start). */
export interface TestProviderScenario {
  /** Text chunks to stream (default 20); chunk `i` (from 0) has `delta.content` `"w<i> "`. */
  chunks?: number;
  /** The answer's text chunks, in order, instead of `chunks` generated ones (e.g. a JSON object split at chosen boundaries). */
  textChunks?: readonly string[];
  /** Delay before the first chunk and between chunks (default 5); 0 = as fast as the socket takes them. */
  intervalMs?: number;
  /** Streamed after the text as `delta.tool_calls`, arguments split over chunks; finish_reason "tool_calls". */
  toolCalls?: { name: string; arguments: string }[];
  /** Answer this HTTP status with a JSON error for the first `times` requests (default: every request). */
  failWith?: { status: number; times?: number; retryAfterSeconds?: number; body?: string };
  /** Destroy the socket before writing anything, for the first `times` requests (default: every request). */
  resetBeforeFirstChunk?: { times?: number };
  /** Destroy the socket after `afterChunks` content/tool chunks were written. */
  failMidStream?: { afterChunks: number };
  /** Stop writing after `afterChunks` content/tool chunks and keep the connection open (a stalled upstream), until the client leaves. */
  stallMidStream?: { afterChunks: number };
  /** Gateway mode: keep generating (counting, not writing) after the client left, until cancelled. */
  ignoreDisconnect?: boolean;
  /** A cancel ends a still-open stream with status 499, or with a final 499 error event once streaming. */
  answer499OnCancel?: boolean;
  /** Send a usage chunk when the request asks `stream_options.include_usage` (default true). */
  usage?: boolean;
  /** The cancel endpoint answers 499 ("cancelled") instead of 200, as some gateways do. */
  cancelAnswers499?: boolean;
  /**
   * The cancel endpoint answers nothing until this many cancel calls are open at once: a client
   * that sends them one after another never gets there (proof that they were sent concurrently).
   */
  holdCancelRepliesUntil?: number;
}

/** One call of the cancel endpoint. */
export interface RecordedCancel {
  token: string;
  /** `performance.now()` when it arrived. */
  at: number;
}

/** One `POST /v1/chat/completions` the provider received, failed ones included. */
export interface RecordedRequest {
  /** 1-based arrival number, equal to its position in `requests` plus one. */
  id: number;
  /** The value of the token header (`options.tokenHeader`, default `x-request-id`). */
  token: string | undefined;
  /** The request's `model`, or "" when absent. */
  model: string;
  /** The parsed JSON body; undefined when it was not JSON or never fully arrived. */
  body: unknown;
  /** The `authorization` header. */
  authorization: string | undefined;
  /** `performance.now()` when the request arrived. */
  startedAt: number;
  /** `performance.now()` of each content/tool chunk written (in gateway mode after a disconnect: would have been). */
  chunkTimes: number[];
  /** `performance.now()` when the response closed: finished, or its connection was lost. */
  socketClosedAt: number | undefined;
  /** Resolves when the response closed (same moment as `socketClosedAt`). */
  closed: Promise<void>;
  /** Cancel calls received for this request's token. */
  cancelCalls: number;
  /** The HTTP status answered; 0 when the socket was reset before any status line. */
  status: number;
}

/** A running test provider; see {@link startTestProvider}. */
export interface TestProvider {
  /** Base URL for an OpenAI client, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  /** POST `{"request_id": token}` (or the token header) here to cancel that token's open streams. */
  cancelUrl: string;
  /** Every chat-completions request, in arrival order. */
  requests: RecordedRequest[];
  /** Every cancel call with a token, in arrival order. */
  cancels: RecordedCancel[];
  /** Resolves when the n-th (1-based, counting all requests) request has arrived. */
  waitForRequest(n: number, options?: { signal?: AbortSignal }): Promise<RecordedRequest>;
  /** Resolves once `request` has `count` chunk times; rejects if its generation ended with fewer. */
  waitForChunks(request: RecordedRequest, count: number, options?: { signal?: AbortSignal }): Promise<void>;
  /** Chunks of `request` written after `time` (a performance.now() value). */
  chunksAfter(request: RecordedRequest, time: number): number;
  /** Sets the scenario for subsequent requests and restarts its `times` counters. */
  setScenario(scenario: TestProviderScenario): void;
  /** Closes the server and every open connection, stops every generation. */
  close(): Promise<void>;
}

/** Options of {@link startTestProvider}. */
export interface TestProviderOptions {
  scenario?: TestProviderScenario;
  /** The request header carrying the cancel token (default `x-request-id`). */
  tokenHeader?: string;
  /** Serve HTTPS with this key and certificate (PEM) instead of HTTP. */
  tls?: { key: string; cert: string };
}

const COMPLETIONS_PATH = "/v1/chat/completions";
const CANCEL_PATH = "/v1/cancel";
const MAX_BODY_BYTES = 8 * 1024 * 1024;
const MAX_CANCEL_BODY_BYTES = 64 * 1024;
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" };

type Delta = Record<string, unknown>;

/** What one answer will contain: every delta is one "chunk"; tool calls also for the non-streamed form. */
interface AnswerPlan {
  deltas: Delta[];
  text: string;
  toolCalls: { id: string; type: "function"; function: { name: string; arguments: string } }[];
}
type StopReason = "cancel" | "disconnect" | "close";

/** The provider-side state of one request while it can still produce chunks. */
interface Generation {
  record: RecordedRequest;
  controller: AbortController;
  stopReason: StopReason | undefined;
  /** Set when generation ended; `waitForChunks` uses it to stop waiting. */
  isDone: boolean;
  done: Promise<void>;
  onProgress: Set<() => void>;
}

/** Starts a provider on 127.0.0.1 with a free port. */
export async function startTestProvider(options: TestProviderOptions = {}): Promise<TestProvider> {
  const provider = new OpenAiTestProvider(options);
  await provider.listen();
  return provider;
}

class OpenAiTestProvider implements TestProvider {
  url = "";
  cancelUrl = "";
  readonly requests: RecordedRequest[] = [];
  readonly cancels: RecordedCancel[] = [];
  /** Cancel replies held back (`holdCancelRepliesUntil`), released together. */
  #heldCancels: (() => void)[] = [];
  readonly #server: http.Server;
  readonly #tokenHeader: string;
  #scenario: TestProviderScenario;
  #scenarioRequests = 0;
  #toolCallCount = 0;
  #isClosed = false;
  readonly #scheme: "http" | "https";
  readonly #generations = new Map<RecordedRequest, Generation>();
  readonly #requestWaiters = new Set<{ n: number; resolve(record: RecordedRequest): void; reject(error: unknown): void }>();

  constructor(options: TestProviderOptions) {
    this.#scenario = options.scenario ?? {};
    this.#tokenHeader = (options.tokenHeader ?? "x-request-id").toLowerCase();
    const handle = (request: http.IncomingMessage, response: http.ServerResponse): void => {
      this.#dispatch(request, response).catch(function destroyOnFailure() {
        response.destroy();
      });
    };
    this.#scheme = options.tls ? "https" : "http";
    this.#server = options.tls ? https.createServer(options.tls, handle) : http.createServer(handle);
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(0, "127.0.0.1", () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    const { port } = this.#server.address() as AddressInfo;
    this.url = `${this.#scheme}://127.0.0.1:${port}/v1`;
    this.cancelUrl = `${this.#scheme}://127.0.0.1:${port}${CANCEL_PATH}`;
  }

  waitForRequest(n: number, options: { signal?: AbortSignal } = {}): Promise<RecordedRequest> {
    options.signal?.throwIfAborted();
    const arrived = this.requests[n - 1];
    if (arrived) return Promise.resolve(arrived);
    if (this.#isClosed) return Promise.reject(new Error("Test provider is closed"));
    return new Promise((resolve, reject) => {
      const onAbort = () => finish(() => reject(options.signal?.reason));
      const waiter = {
        n,
        resolve: (record: RecordedRequest) => finish(() => resolve(record)),
        reject: (error: unknown) => finish(() => reject(error)),
      };
      const finish = (settle: () => void) => {
        this.#requestWaiters.delete(waiter);
        options.signal?.removeEventListener("abort", onAbort);
        settle();
      };
      this.#requestWaiters.add(waiter);
      options.signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  waitForChunks(request: RecordedRequest, count: number, options: { signal?: AbortSignal } = {}): Promise<void> {
    options.signal?.throwIfAborted();
    const generation = this.#generations.get(request);
    return new Promise((resolve, reject) => {
      const check = () => {
        if (request.chunkTimes.length >= count) return finish(resolve);
        if (!generation || generation.isDone) {
          finish(() => reject(new Error(`Request ${request.id} ended with ${request.chunkTimes.length} of ${count} chunks`)));
        }
      };
      const onAbort = () => finish(() => reject(options.signal?.reason));
      const finish = (settle: () => void) => {
        generation?.onProgress.delete(check);
        options.signal?.removeEventListener("abort", onAbort);
        settle();
      };
      generation?.onProgress.add(check);
      options.signal?.addEventListener("abort", onAbort, { once: true });
      check();
    });
  }

  chunksAfter(request: RecordedRequest, time: number): number {
    return request.chunkTimes.filter((chunkTime) => chunkTime > time).length;
  }

  setScenario(scenario: TestProviderScenario): void {
    this.#scenario = scenario;
    this.#scenarioRequests = 0;
  }

  async close(): Promise<void> {
    if (!this.#isClosed) {
      this.#isClosed = true;
      for (const waiter of this.#requestWaiters) waiter.reject(new Error("Test provider is closed"));
      for (const held of this.#heldCancels.splice(0)) held();
      for (const generation of this.#generations.values()) stopGeneration(generation, "close");
    }
    await Promise.all([...this.#generations.values()].map((generation) => generation.done));
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #dispatch(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const path = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    if (request.method === "POST" && path === COMPLETIONS_PATH) return this.#handleCompletion(request, response);
    if (request.method === "POST" && path === CANCEL_PATH) return this.#handleCancel(request, response);
    request.resume();
    sendJson(response, 404, { error: { message: `Unknown path ${path}`, type: "invalid_request_error", code: "not_found" } });
  }

  async #handleCompletion(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const scenario = this.#scenario;
    const scenarioIndex = this.#scenarioRequests++;
    const record = this.#createRecord(request, response);
    let text: string | undefined;
    try {
      text = await readBody(request, MAX_BODY_BYTES);
    } catch {
      // The client left before its body arrived: recorded, nothing to answer.
      return this.#addRecord(record);
    }
    const body = parseJson(text);
    record.body = body;
    if (isRecord(body) && typeof body.model === "string") record.model = body.model;
    this.#addRecord(record);

    if (text === undefined) {
      record.status = 413;
      sendJson(response, 413, openAiError("Request body too large", "invalid_request_error"));
      return;
    }
    if (!isRecord(body) || !Array.isArray(body.messages)) {
      record.status = 400;
      sendJson(response, 400, openAiError("Expected a JSON body with a messages array", "invalid_request_error"));
      return;
    }
    if (scenario.resetBeforeFirstChunk && scenarioIndex < (scenario.resetBeforeFirstChunk.times ?? Infinity)) {
      response.socket?.destroy();
      return;
    }
    const failure = scenario.failWith;
    if (failure && scenarioIndex < (failure.times ?? Infinity)) {
      record.status = failure.status;
      const headers = failure.retryAfterSeconds === undefined ? {} : { "retry-after": String(failure.retryAfterSeconds) };
      sendText(response, failure.status, failure.body ?? JSON.stringify(openAiError("secret upstream detail", errorType(failure.status))), headers);
      return;
    }
    const plan = this.#planAnswer(scenario);
    const promptTokens = countPromptWords(body.messages);
    if (body.stream !== true) return answerAtOnce(record, response, plan, scenario, promptTokens);
    const includeUsage = (scenario.usage ?? true) && isRecord(body.stream_options) && body.stream_options.include_usage === true;
    await this.#stream(record, response, plan, scenario, includeUsage ? promptTokens : undefined);
  }

  #createRecord(request: http.IncomingMessage, response: http.ServerResponse): RecordedRequest {
    let resolveClosed!: () => void;
    const record: RecordedRequest = {
      id: 0,
      token: headerValue(request.headers[this.#tokenHeader]),
      model: "",
      body: undefined,
      authorization: headerValue(request.headers.authorization),
      startedAt: performance.now(),
      chunkTimes: [],
      socketClosedAt: undefined,
      closed: new Promise<void>((resolve) => (resolveClosed = resolve)),
      cancelCalls: 0,
      status: 0,
    };
    response.once("close", function recordClose() {
      record.socketClosedAt = performance.now();
      resolveClosed();
    });
    return record;
  }

  #addRecord(record: RecordedRequest): void {
    this.requests.push(record);
    record.id = this.requests.length;
    for (const waiter of this.#requestWaiters) {
      if (waiter.n <= this.requests.length) waiter.resolve(this.requests[waiter.n - 1]!);
    }
  }

  /** The answer's text deltas, then each tool call as a header delta and its arguments in two halves. */
  #planAnswer(scenario: TestProviderScenario): AnswerPlan {
    const plan: AnswerPlan = { deltas: [], text: "", toolCalls: [] };
    const texts = scenario.textChunks ?? Array.from({ length: scenario.chunks ?? 20 }, (_, index) => `w${index} `);
    for (const text of texts) {
      plan.deltas.push({ content: text });
      plan.text += text;
    }
    for (const [index, { name, arguments: args }] of (scenario.toolCalls ?? []).entries()) {
      const id = `call_${++this.#toolCallCount}`;
      plan.toolCalls.push({ id, type: "function", function: { name, arguments: args } });
      plan.deltas.push({ tool_calls: [{ index, id, type: "function", function: { name, arguments: "" } }] });
      const half = Math.ceil(args.length / 2);
      for (const part of [args.slice(0, half), args.slice(half)]) {
        plan.deltas.push({ tool_calls: [{ index, function: { arguments: part } }] });
      }
    }
    return plan;
  }

  async #stream(
    record: RecordedRequest,
    response: http.ServerResponse,
    plan: AnswerPlan,
    scenario: TestProviderScenario,
    promptTokens: number | undefined,
  ): Promise<void> {
    let markDone!: () => void;
    const generation: Generation = {
      record,
      controller: new AbortController(),
      stopReason: undefined,
      isDone: false,
      done: new Promise<void>((resolve) => (markDone = resolve)),
      onProgress: new Set(),
    };
    this.#generations.set(record, generation);
    const signal = generation.controller.signal;
    const isClientGone = () => response.destroyed && !response.writableFinished;
    const onClose = () => {
      if (isClientGone() && !scenario.ignoreDisconnect) stopGeneration(generation, "disconnect");
    };
    response.once("close", onClose);
    const intervalMs = scenario.intervalMs ?? 5;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: Delta, finishReason: string | null = null) =>
      sseData({
        id: `chatcmpl-${record.id}`,
        object: "chat.completion.chunk",
        created,
        model: record.model,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
      });
    const writeHeaders = () => {
      if (response.headersSent || response.destroyed) return;
      record.status = 200;
      response.writeHead(200, SSE_HEADERS);
    };
    try {
      // Time to first token: headers wait for the first chunk, so a cancel can still answer 499.
      await pause(intervalMs, signal);
      if (!signal.aborted && !isClientGone()) {
        writeHeaders();
        response.write(chunk({ role: "assistant", content: "" }));
      }
      for (const [index, delta] of plan.deltas.entries()) {
        if (index > 0) await pause(intervalMs, signal);
        if (signal.aborted) break;
        if (scenario.failMidStream && index === scenario.failMidStream.afterChunks) return destroyAfterFlush(response);
        if (scenario.stallMidStream && index === scenario.stallMidStream.afterChunks) {
          await untilClosed(response, signal);
          return;
        }
        if (isClientGone()) {
          record.chunkTimes.push(performance.now());
        } else {
          const isWritable = response.write(chunk(delta));
          record.chunkTimes.push(performance.now());
          if (!isWritable) await drained(response, signal);
        }
        for (const notify of generation.onProgress) notify();
      }
      if (isClientGone()) return;
      if (signal.aborted) return endStopped(response, generation, scenario, writeHeaders);
      if (scenario.failMidStream && plan.deltas.length === scenario.failMidStream.afterChunks) return destroyAfterFlush(response);
      // Every chunk written, the finish not yet: the whole text arrived, the generation has not ended.
      if (scenario.stallMidStream && plan.deltas.length === scenario.stallMidStream.afterChunks) {
        await untilClosed(response, signal);
        return;
      }
      const finishReason = plan.toolCalls.length > 0 ? "tool_calls" : "stop";
      writeHeaders();
      response.write(chunk({}, finishReason));
      if (promptTokens !== undefined) {
        const usage = usageOf(promptTokens, record.chunkTimes.length);
        response.write(sseData({ id: `chatcmpl-${record.id}`, object: "chat.completion.chunk", created, model: record.model, choices: [], usage }));
      }
      response.end("data: [DONE]\n\n");
    } finally {
      response.off("close", onClose);
      this.#generations.delete(record);
      generation.isDone = true;
      for (const notify of generation.onProgress) notify();
      markDone();
    }
  }

  async #handleCancel(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const body = parseJson(await readBody(request, MAX_CANCEL_BODY_BYTES));
    const token = isRecord(body) && typeof body.request_id === "string" ? body.request_id : headerValue(request.headers[this.#tokenHeader]);
    if (token === undefined) return sendJson(response, 400, openAiError("Expected request_id", "invalid_request_error"));
    this.cancels.push({ token, at: performance.now() });
    const hold = this.#scenario.holdCancelRepliesUntil;
    if (hold !== undefined) {
      await new Promise<void>((release) => {
        this.#heldCancels.push(release);
        if (this.#heldCancels.length >= hold) for (const held of this.#heldCancels.splice(0)) held();
      });
    }
    const answer = (status: string): void => sendJson(response, this.#scenario.cancelAnswers499 ? 499 : 200, { status });
    const matching = this.requests.filter((record) => record.token === token);
    if (matching.length === 0) return sendJson(response, 404, { status: "unknown" });
    for (const record of matching) record.cancelCalls++;
    const open = [...this.#generations.values()].filter((generation) => generation.record.token === token);
    if (open.length === 0) return answer("already_finished");
    for (const generation of open) stopGeneration(generation, "cancel");
    // Answer once generation has really stopped, so a caller may count chunks right after.
    await Promise.all(open.map((generation) => generation.done));
    answer("cancelled");
  }
}

function stopGeneration(generation: Generation, reason: StopReason): void {
  generation.stopReason ??= reason;
  generation.controller.abort(new Error(`Generation stopped: ${reason}`));
}

/** Ends a stream whose generation was stopped while its client is still connected. */
function endStopped(response: http.ServerResponse, generation: Generation, scenario: TestProviderScenario, writeHeaders: () => void): void {
  if (generation.stopReason === "close") return void response.destroy();
  if (generation.stopReason === "cancel" && scenario.answer499OnCancel) {
    const error = { message: "Request cancelled", type: "cancelled", code: 499 };
    if (!response.headersSent) {
      generation.record.status = 499;
      response.writeHead(499, "Client Closed Request", { "content-type": "application/json" });
      return void response.end(JSON.stringify({ error }));
    }
    return void response.end(sseData({ error }));
  }
  // A plain cancel just stops: the stream ends without finish_reason or [DONE].
  writeHeaders();
  response.end();
}

/** A mid-stream failure: what was written reaches the client, then the connection drops without an end. */
function destroyAfterFlush(response: http.ServerResponse): void {
  // Node corks a chunked response for the current tick; destroying a corked socket would lose those bytes.
  const socket = response.socket;
  while (socket?.writableCorked) socket.uncork();
  response.destroy();
}

/** The `"stream": false` answer: one `chat.completion` object, written at once (title generation). */
function answerAtOnce(
  record: RecordedRequest,
  response: http.ServerResponse,
  plan: AnswerPlan,
  scenario: TestProviderScenario,
  promptTokens: number,
): void {
  if (scenario.failMidStream) return void response.destroy();
  const hasToolCalls = plan.toolCalls.length > 0;
  const message = {
    role: "assistant",
    content: plan.text === "" && hasToolCalls ? null : plan.text,
    ...(hasToolCalls ? { tool_calls: plan.toolCalls } : {}),
  };
  const now = performance.now();
  for (let index = 0; index < plan.deltas.length; index++) record.chunkTimes.push(now);
  record.status = 200;
  sendJson(response, 200, {
    id: `chatcmpl-${record.id}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: record.model,
    choices: [{ index: 0, message, finish_reason: hasToolCalls ? "tool_calls" : "stop" }],
    usage: usageOf(promptTokens, plan.deltas.length),
  });
}

function usageOf(promptTokens: number, completionTokens: number) {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

/** Whitespace-separated words in all message contents, strings or content-part arrays. */
function countPromptWords(messages: unknown[]): number {
  let words = 0;
  for (const message of messages) {
    if (!isRecord(message)) continue;
    const parts = Array.isArray(message.content) ? message.content : [message.content];
    for (const part of parts) {
      const text = typeof part === "string" ? part : isRecord(part) && typeof part.text === "string" ? part.text : "";
      words += text.split(/\s+/).filter(Boolean).length;
    }
  }
  return words;
}

function sseData(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

function openAiError(message: string, type: string) {
  return { error: { message, type, param: null, code: null } };
}

function errorType(status: number): string {
  if (status === 429) return "rate_limit_exceeded";
  if (status === 401 || status === 403) return "authentication_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

function sendJson(response: http.ServerResponse, status: number, value: unknown): void {
  sendText(response, status, JSON.stringify(value));
}

/** Resolves once the response closed (the client left) or the generation was stopped. */
function untilClosed(response: http.ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (response.destroyed || signal.aborted) return resolve();
    const done = () => {
      response.off("close", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    response.once("close", done);
    signal.addEventListener("abort", done, { once: true });
  });
}

function sendText(response: http.ServerResponse, status: number, text: string, headers: http.OutgoingHttpHeaders = {}): void {
  response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text), ...headers });
  response.end(text);
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The whole body as text, undefined when it exceeds `maxBytes` (the excess is drained, not kept); rejects when the client aborts. */
function readBody(request: http.IncomingMessage, maxBytes: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", function collect(chunk: Buffer) {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
    });
    request.once("end", () => resolve(size > maxBytes ? undefined : Buffer.concat(chunks).toString("utf8")));
    request.once("error", reject);
    request.once("close", () => {
      if (!request.complete) reject(new Error("Request aborted before its body arrived"));
    });
  });
}

/** Waits `ms` (0: one event-loop turn, so I/O such as a disconnect is seen); resolves early on abort. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (ms > 0) clearTimeout(timer as NodeJS.Timeout);
      else clearImmediate(timer as NodeJS.Immediate);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = ms > 0 ? setTimeout(done, ms) : setImmediate(done);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Resolves when `response` can take more data, closed, or `signal` aborted (backpressure). */
function drained(response: http.ServerResponse, signal: AbortSignal): Promise<void> {
  if (signal.aborted || response.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      response.off("drain", done);
      response.off("close", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    response.once("drain", done);
    response.once("close", done);
    signal.addEventListener("abort", done, { once: true });
  });
}
