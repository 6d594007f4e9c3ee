/**
 * The AI SDK transport (src/client/ai-sdk-transport.ts) driven by the AI SDK's own chat class
 * (`AbstractChat` with an in-memory state, as the AI SDK's framework bindings do) against a real
 * Tidemark server: a send streams the whole answer; `chat.stop()` is a real cancel on the server
 * and publishes nothing partial; a new chat instance (a page reload) resumes a running stream; a
 * failed run is the chat's error; deltas after an accepted cancel are never shown.
 *
 * The model is scripted per test; where a run must still be going when the test acts, the model
 * waits on a gate the test opens, or streams until it is stopped: no sleeps synchronise anything.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AbstractChat, readUIMessageStream, type ChatInit, type ChatState, type ChatStatus, type UIMessage, type UIMessageChunk } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTidemarkTransport, type TidemarkStopOutcome } from "../src/client/ai-sdk-transport.js";
import { createRunId } from "../src/client/create-run-id.js";
import { TidemarkClientError } from "../src/client/index.js";
import type { RunEvent } from "../src/core/index.js";
import { abortableDelay, createDemoModel, ModelError, type ChatModel } from "../src/runtime/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";

/** What the scripted model does for the next request. */
type Script =
  | { kind: "words"; words: string[] }
  | { kind: "endless" }
  | { kind: "stubborn"; gate: Promise<void> }
  | { kind: "gated"; before: string[]; gate: Promise<void>; after: string[] }
  | { kind: "fail"; words: string[]; message: string }
  | { kind: "demo" };

let script: Script = { kind: "words", words: ["Hello"] };
const demo = createDemoModel({ wordsPerSecond: 0, wordCount: 20 });

/** Resolves with the gate, or rejects when the run is cancelled. */
function gateOrAbort(gate: Promise<void>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    gate.then(resolve, reject);
  });
}

const scriptedModel: ChatModel = {
  id: "scripted",
  async *stream(request, { signal }) {
    const current = script;
    switch (current.kind) {
      case "demo":
        yield* demo.stream(request, { signal });
        return;
      case "words":
        for (const word of current.words) yield { type: "text-delta", text: `${word} ` };
        break;
      case "endless":
        // The model's own pace (so a person could press Stop); it honours the signal at once.
        for (let index = 0; ; index++) {
          yield { type: "text-delta", text: `w${index} ` };
          await abortableDelay(3, signal);
        }
      case "stubborn":
        // Like a provider without abort: after a cancel it keeps the run busy until the gate opens.
        for (let index = 0; !signal.aborted; index++) {
          yield { type: "text-delta", text: `s${index} ` };
          await new Promise((resolve) => setTimeout(resolve, 3));
        }
        await current.gate;
        return;
      case "gated":
        for (const word of current.before) yield { type: "text-delta", text: `${word} ` };
        await gateOrAbort(current.gate, signal);
        for (const word of current.after) yield { type: "text-delta", text: `${word} ` };
        break;
      case "fail":
        for (const word of current.words) yield { type: "text-delta", text: `${word} ` };
        throw new ModelError("rejected", current.message, { status: 500 });
    }
    yield { type: "finish", finishReason: "stop" };
  },
};

/** The in-memory chat state: what `useChat` keeps in React state, with change notifications. */
class MemoryChatState implements ChatState<UIMessage> {
  error: Error | undefined = undefined;
  #status: ChatStatus = "ready";
  #messages: UIMessage[];
  readonly #listeners = new Set<() => void>();

  constructor(messages: UIMessage[]) {
    this.#messages = messages.map((message) => structuredClone(message));
  }
  get status(): ChatStatus {
    return this.#status;
  }
  set status(status: ChatStatus) {
    this.#status = status;
    this.#changed();
  }
  get messages(): UIMessage[] {
    return this.#messages;
  }
  set messages(messages: UIMessage[]) {
    this.#messages = [...messages];
    this.#changed();
  }
  pushMessage = (message: UIMessage): void => {
    this.#messages = [...this.#messages, structuredClone(message)];
    this.#changed();
  };
  popMessage = (): void => {
    this.#messages = this.#messages.slice(0, -1);
    this.#changed();
  };
  replaceMessage = (index: number, message: UIMessage): void => {
    this.#messages = this.#messages.map((existing, at) => (at === index ? structuredClone(message) : existing));
    this.#changed();
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
  #changed(): void {
    for (const listener of this.#listeners) listener();
  }
}

/** A framework-free chat: the AI SDK's AbstractChat over {@link MemoryChatState}. */
class TestChat extends AbstractChat<UIMessage> {
  readonly store: MemoryChatState;

  constructor(init: ChatInit<UIMessage>) {
    const { messages, ...rest } = init;
    const store = new MemoryChatState(messages ?? []);
    super({ ...rest, state: store });
    this.store = store;
  }

  /** The text of the last assistant message. */
  get answer(): string {
    const last = this.messages.findLast((message) => message.role === "assistant");
    return last ? textOf(last) : "";
  }

  /** Resolves once `condition` holds, checked on every state change (bounded, so a bug fails fast). */
  waitFor(condition: (chat: TestChat) => boolean, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      if (condition(this)) return resolve();
      const timer = setTimeout(() => {
        unsubscribe();
        reject(new Error(`timed out waiting for ${what}`));
      }, 10_000);
      const unsubscribe = this.store.subscribe(() => {
        if (!condition(this)) return;
        clearTimeout(timer);
        unsubscribe();
        resolve();
      });
    });
  }
}

const textOf = (message: UIMessage): string => message.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
const tidemarkOf = (message: UIMessage | undefined): any => (message?.metadata as { tidemark?: unknown } | undefined)?.tidemark;

/** A promise with its resolve function. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => (resolve = done));
  return { promise, resolve };
}

async function readAll(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe("the AI SDK transport over a real server", () => {
  let h: Harness;
  let dir: string;
  let outbox: DemoOutbox;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-ai-sdk-"));
    outbox = createDemoOutbox(join(dir, "outbox.db"));
    h = await startHarness({ model: scriptedModel, tools: createDemoTools({ outbox, searchDelayMs: 20 }) });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    outbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const history = async (threadId: string): Promise<any[]> => (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
  const run = async (runId: string): Promise<any> => (await h.api(`/v1/runs/${runId}`)).body;

  it("sends a message and receives the full text; the chat is mapped to one thread", async () => {
    const created: { chatId: string; threadId: string }[] = [];
    const transport = createTidemarkTransport({ baseUrl: h.url, onThreadCreated: ({ chatId, threadId }) => void created.push({ chatId, threadId }) });
    const chat = new TestChat({ id: "chat-basic", transport });
    script = { kind: "words", words: "the quick brown fox jumps over the lazy dog".split(" ") };
    await chat.sendMessage({ text: "Hello there" });

    expect(chat.status).toBe("ready");
    expect(chat.error).toBeUndefined();
    expect(created).toEqual([{ chatId: "chat-basic", threadId: expect.stringMatching(/^thr_/) }]);
    const threadId = created[0]!.threadId;
    expect(transport.threadIdOf("chat-basic")).toBe(threadId);
    expect((await h.api(`/v1/threads/${threadId}`)).body.metadata).toMatchObject({ ai_sdk_chat_id: "chat-basic" });

    const messages = await history(threadId);
    expect(messages.map((message) => [message.role, message.content])).toEqual([
      ["user", "Hello there"],
      ["assistant", "the quick brown fox jumps over the lazy dog "],
    ]);
    const assistant = chat.messages.at(-1)!;
    expect(assistant.role).toBe("assistant");
    expect(textOf(assistant)).toBe(messages[1].content);
    // One UI message per run, named by the run; its metadata says what the server confirmed.
    const info = tidemarkOf(assistant);
    expect(assistant.id).toBe(info.run_id);
    expect(info).toMatchObject({ thread_id: threadId, status: "completed", published_message_id: messages[1].message_id });

    // The next message goes to the same thread.
    script = { kind: "words", words: ["second", "answer"] };
    await chat.sendMessage({ text: "And again" });
    expect(chat.answer).toBe("second answer ");
    expect((await history(threadId)).map((message) => message.content)).toEqual(["Hello there", messages[1].content, "And again", "second answer "]);
    expect(created).toHaveLength(1);
  });

  it("names the version it builds on: a thread that moved on in another tab answers state_version_conflict", async () => {
    const transport = createTidemarkTransport({ baseUrl: h.url });
    const chat = new TestChat({ id: "chat-two-tabs", transport });
    script = { kind: "words", words: ["first", "answer"] };
    await chat.sendMessage({ text: "Hello" });
    const threadId = transport.threadIdOf("chat-two-tabs")!;
    const before = (await h.api(`/v1/threads/${threadId}`)).body.state_version as number;

    // Another tab (another transport on the same thread) moves the thread on.
    const otherTab = new TestChat({ id: threadId, transport: createTidemarkTransport({ baseUrl: h.url }) });
    script = { kind: "words", words: ["other", "tab"] };
    await otherTab.sendMessage({ text: "From the other tab" });

    script = { kind: "words", words: ["never", "sent"] };
    await chat.sendMessage({ text: "Stale tab" });
    expect(chat.status).toBe("error");
    expect(String(chat.error)).toMatch(/state_version|version/i);
    const contents = (await history(threadId)).map((message) => message.content);
    expect(contents).not.toContain("Stale tab");
    expect((await h.api(`/v1/threads/${threadId}`)).body.state_version).toBeGreaterThan(before);
  });

  it("maps the run's events to UI message chunks, ending a completed run with finish", async () => {
    const transport = createTidemarkTransport({ baseUrl: h.url });
    script = { kind: "words", words: ["one", "two", "three"] };
    const stream = await transport.sendMessages({
      chatId: "chat-raw",
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
      messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "count" }] }],
    });
    const chunks = await readAll(stream);
    const types = chunks.map((chunk) => chunk.type);
    expect(types[0]).toBe("start");
    expect(types.filter((type) => type === "text-start")).toHaveLength(1);
    expect(types.indexOf("text-end")).toBeGreaterThan(types.lastIndexOf("text-delta"));
    expect(types.at(-1)).toBe("finish");
    const text = chunks.map((chunk) => (chunk.type === "text-delta" ? chunk.delta : "")).join("");
    expect(text).toBe("one two three ");
    expect(transport.lastRun("chat-raw")).toMatchObject({ status: "completed", thread_id: transport.threadIdOf("chat-raw") });
  });

  it("stop() mid-stream cancels the run on the server, and nothing partial is published", async () => {
    const stops: TidemarkStopOutcome[] = [];
    const transport = createTidemarkTransport({ baseUrl: h.url, onStop: (outcome) => void stops.push(outcome) });
    const chat = new TestChat({ id: "chat-stop", transport });
    script = { kind: "endless" };
    const sending = chat.sendMessage({ text: "Tell me a long story" });
    await chat.waitFor((current) => current.answer.length > 0, "the first text");
    await chat.stop();
    await sending;
    await transport.settled();

    const seen = chat.answer;
    expect(seen.length).toBeGreaterThan(0);
    expect(chat.status).toBe("ready");
    expect(chat.error).toBeUndefined();
    const runId = tidemarkOf(chat.messages.at(-1)).run_id as string;
    expect(await run(runId)).toMatchObject({ status: "cancelled", cancel_reason: "user_pressed_stop", published_message_id: null });
    expect(stops).toEqual([expect.objectContaining({ runId, cancel: expect.objectContaining({ status: "cancelled" }) })]);
    const threadId = transport.threadIdOf("chat-stop")!;
    expect((await history(threadId)).map((message) => message.role)).toEqual(["user"]);
    // What the chat showed is exactly a prefix of what was streamed before the cancel.
    const events = await h.events(runId);
    const cancelAt = events.findIndex((event) => event.type === "run.cancel_requested");
    expect(deltaText(events.slice(0, cancelAt)).startsWith(seen)).toBe(true);
    expect(transport.lastRun("chat-stop")).toMatchObject({ run_id: runId, status: "cancelled", last_message_id: expect.stringMatching(/^msg_/) });
  });

  it("a message sent right after stop() waits for the cancel instead of meeting run_in_progress", async () => {
    const creates: string[] = [];
    let gateOpen = false;
    const watchedFetch: typeof fetch = (input, init) => {
      if (init?.method === "POST" && String(input).endsWith("/runs")) creates.push(gateOpen ? "after" : "before");
      return fetch(input, init);
    };
    const transport = createTidemarkTransport({ baseUrl: h.url, fetch: watchedFetch });
    const chat = new TestChat({ id: "chat-stop-then-send", transport });
    const gate = deferred();
    script = { kind: "stubborn", gate: gate.promise };
    const sending = chat.sendMessage({ text: "Go on and on" });
    await chat.waitFor((current) => current.answer.length > 0, "the first text");
    await chat.stop();
    await sending;
    const stoppedRunId = tidemarkOf(chat.messages.at(-1)).run_id as string;

    script = { kind: "words", words: ["short", "one"] };
    const next = chat.sendMessage({ text: "Just a short one" });
    // Let the send go as far as it can without the network (microtasks only), then let the stopped run end.
    await new Promise((resolve) => setImmediate(resolve));
    gateOpen = true;
    gate.resolve();
    await next;
    expect(creates).toEqual(["before", "after"]);
    expect(chat.error).toBeUndefined();
    expect(chat.answer).toBe("short one ");
    expect((await run(stoppedRunId)).status).toBe("cancelled");
    const messages = await history(transport.threadIdOf("chat-stop-then-send")!);
    expect(messages.map((message) => [message.role, message.content])).toEqual([
      ["user", "Go on and on"],
      ["user", "Just a short one"],
      ["assistant", "short one "],
    ]);
  });

  it("regenerate after a Stop continues from the cancel checkpoint; a published answer is not replaced", async () => {
    const transport = createTidemarkTransport({ baseUrl: h.url });
    const chat = new TestChat({ id: "chat-regenerate", transport });
    script = { kind: "endless" };
    const sending = chat.sendMessage({ text: "Write something" });
    await chat.waitFor((current) => current.answer.length > 0, "the first text");
    await chat.stop();
    await sending;
    const stoppedRunId = tidemarkOf(chat.messages.at(-1)).run_id as string;

    // Regenerate at once: the transport waits for the Stop to land before it reads the head.
    script = { kind: "words", words: ["continued", "answer"] };
    await chat.regenerate();
    expect(chat.error).toBeUndefined();
    expect(chat.messages.map((message) => message.role)).toEqual(["user", "assistant"]);
    expect(chat.answer).toBe("continued answer ");
    const stopped = await run(stoppedRunId);
    expect(stopped.status).toBe("cancelled");
    const continued = await run(tidemarkOf(chat.messages.at(-1)).run_id);
    expect(continued).toMatchObject({ status: "completed", base_checkpoint_id: stopped.resume_checkpoint_id, input_message_id: null });
    expect((await history(stopped.thread_id)).map((message) => message.content)).toEqual(["Write something", "continued answer "]);

    // The answer is published now: history is append-only, so regenerate says so instead of pretending.
    await chat.regenerate();
    expect(chat.status).toBe("error");
    expect(chat.error?.message).toMatch(/keeps published answers/);
    // A refusal of the client itself: typed, with a stable code.
    expect(TidemarkClientError.isInstance(chat.error)).toBe(true);
    expect(chat.error).toMatchObject({ code: "answer_published" });
    expect(await history(stopped.thread_id)).toHaveLength(2);
  });

  it("a Stop pressed before the create's reply arrived still cancels the run", async () => {
    const createReached = deferred();
    const releaseCreate = deferred();
    // Holds the run-creating request back until the Stop's cancel has been answered.
    const heldFetch: typeof fetch = async (input, init) => {
      if (init?.method === "POST" && String(input).endsWith("/runs")) {
        createReached.resolve();
        await releaseCreate.promise;
      }
      return fetch(input, init);
    };
    const stops: TidemarkStopOutcome[] = [];
    const transport = createTidemarkTransport({ baseUrl: h.url, fetch: heldFetch, onStop: (outcome) => void stops.push(outcome) });
    const chat = new TestChat({ id: "chat-early-stop", transport });
    script = { kind: "endless" };
    const sending = chat.sendMessage({ text: "Start and stop at once" });
    await createReached.promise;
    const stopping = chat.stop();
    await transport.settled();
    expect(stops[0]?.cancel).toMatchObject({ status: "cancel_requested", pending_creation: true });
    releaseCreate.resolve();
    await Promise.all([sending, stopping]);

    expect(chat.status).toBe("ready");
    expect(await run(stops[0]!.runId)).toMatchObject({ status: "cancelled", cancel_reason: "user_pressed_stop" });
    expect((await history(stops[0]!.threadId)).map((message) => message.role)).toEqual(["user"]);
  });

  it("a new chat instance with the same id (a page reload) resumes the running stream to the full text", async () => {
    const storage = new Map<string, string>();
    const first = createTidemarkTransport({ baseUrl: h.url, onThreadCreated: ({ chatId, threadId }) => void storage.set(chatId, threadId) });
    const chat = new TestChat({ id: "chat-reload", transport: first });
    const gate = deferred();
    script = { kind: "gated", before: ["before", "the", "reload"], gate: gate.promise, after: ["and", "after", "it"] };
    const sending = chat.sendMessage({ text: "Survive a reload" });
    await chat.waitFor((current) => current.answer.length > 0, "the first text");

    // The reload: a new transport that finds the thread through its hook, and a new chat with the history it had.
    const second = createTidemarkTransport({ baseUrl: h.url, threadIdFor: (chatId) => storage.get(chatId) });
    const reloaded = new TestChat({ id: "chat-reload", transport: second, messages: [chat.messages[0]!] });
    // Asked twice, as React's StrictMode does: the chat aborts the first resume for the second, which is no Stop.
    const superseded = reloaded.resumeStream();
    const resuming = reloaded.resumeStream();
    await reloaded.waitFor((current) => current.answer === "before the reload ", "the replayed text");
    gate.resolve();
    await Promise.all([superseded, resuming, sending, second.settled()]);
    expect(await run(tidemarkOf(reloaded.messages.at(-1)).run_id)).toMatchObject({ status: "completed", cancel_requested_at: null });

    const threadId = storage.get("chat-reload")!;
    const messages = await history(threadId);
    expect(messages.map((message) => message.content)).toEqual(["Survive a reload", "before the reload and after it "]);
    expect(reloaded.status).toBe("ready");
    expect(reloaded.messages).toHaveLength(2);
    expect(reloaded.answer).toBe(messages[1].content);
    expect(chat.answer).toBe(messages[1].content);
    expect(reloaded.messages[1]!.id).toBe(chat.messages[1]!.id);

    // Nothing runs any more: there is nothing to resume, and an unknown chat creates no thread.
    expect(await second.reconnectToStream({ chatId: "chat-reload" })).toBeNull();
    expect(await second.reconnectToStream({ chatId: "chat-never-seen" })).toBeNull();
    expect(second.threadIdOf("chat-never-seen")).toBeUndefined();
  });

  it("stop() on a resumed stream cancels the run too", async () => {
    const storage = new Map<string, string>();
    const first = createTidemarkTransport({ baseUrl: h.url, onThreadCreated: ({ chatId, threadId }) => void storage.set(chatId, threadId) });
    const chat = new TestChat({ id: "chat-reload-stop", transport: first });
    script = { kind: "endless" };
    const sending = chat.sendMessage({ text: "Stop me after the reload" });
    await chat.waitFor((current) => current.answer.length > 0, "the first text");

    const second = createTidemarkTransport({ baseUrl: h.url, threadIdFor: (chatId) => storage.get(chatId) });
    const reloaded = new TestChat({ id: "chat-reload-stop", transport: second, messages: [chat.messages[0]!] });
    const resuming = reloaded.resumeStream();
    await reloaded.waitFor((current) => current.answer.length > 0, "the replayed text");
    await reloaded.stop();
    await Promise.all([resuming, second.settled(), sending]);

    const runId = tidemarkOf(reloaded.messages.at(-1)).run_id as string;
    expect(await run(runId)).toMatchObject({ status: "cancelled", cancel_reason: "user_pressed_stop" });
    expect((await history(storage.get("chat-reload-stop")!)).map((message) => message.role)).toEqual(["user"]);
    // The first tab saw the cancel in its stream: it ends without an error and says so.
    expect(chat.status).toBe("ready");
    expect(tidemarkOf(chat.messages.at(-1))).toMatchObject({ status: "cancelled" });
  });

  it("a failed run surfaces as the chat's error, and nothing is published", async () => {
    const errors: Error[] = [];
    const transport = createTidemarkTransport({ baseUrl: h.url });
    const chat = new TestChat({ id: "chat-fail", transport, onError: (error) => void errors.push(error) });
    script = { kind: "fail", words: ["partial", "words"], message: "The model provider answered HTTP 500." };
    await chat.sendMessage({ text: "This will fail" });

    expect(chat.status).toBe("error");
    expect(chat.error?.message).toBe("The run failed (provider_error): The model provider answered HTTP 500.");
    expect(errors).toHaveLength(1);
    const info = transport.lastRun("chat-fail")!;
    expect(info).toMatchObject({ status: "failed", failure_reason: "provider_error" });
    expect(await run(info.run_id)).toMatchObject({ status: "failed", failure_reason: "provider_error" });
    expect((await history(info.thread_id)).map((message) => message.role)).toEqual(["user"]);
  });

  it("a cancel from elsewhere ends the chat's stream with abort, showing no delta after run.cancel_requested", async () => {
    const transport = createTidemarkTransport({ baseUrl: h.url });
    script = { kind: "endless" };
    const stream = await transport.sendMessages({
      chatId: "chat-other-tab",
      trigger: "submit-message",
      messageId: undefined,
      abortSignal: undefined,
      messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Stream until another tab stops me" }] }],
    });
    const reader = stream.getReader();
    const chunks: UIMessageChunk[] = [];
    while (!chunks.some((chunk) => chunk.type === "text-delta")) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
    const runId = transport.lastRun("chat-other-tab")!.run_id;
    const cancel = await h.api(`/v1/runs/${runId}/cancel`, { method: "POST", json: { reason: "other_tab" } });
    expect(cancel.status).toBe(202);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      chunks.push(value);
    }

    expect(chunks.at(-1)).toEqual({ type: "abort", reason: "other_tab" });
    expect(chunks.some((chunk) => chunk.type === "error" || chunk.type === "finish")).toBe(false);
    const shown = chunks.map((chunk) => (chunk.type === "text-delta" ? chunk.delta : "")).join("");
    const events = await h.events(runId);
    const cancelAt = events.findIndex((event) => event.type === "run.cancel_requested");
    expect(cancelAt).toBeGreaterThan(0);
    expect(shown).toBe(deltaText(events.slice(0, cancelAt)));
    expect(transport.lastRun("chat-other-tab")).toMatchObject({ status: "cancelled", cancel_reason: "other_tab" });
    expect((await history(transport.threadIdOf("chat-other-tab")!)).map((message) => message.role)).toEqual(["user"]);
  });

  it("ignores deltas that arrive after run.cancel_requested (the honest boundary)", async () => {
    // A server-side race can put a delta on the wire after the cancel was accepted; it must not become text.
    const threadId = "thr_" + "0".repeat(26);
    const runId = createRunId();
    const frames: RunEvent[] = [
      { type: "run.started", seq: 1, run_id: runId, thread_id: threadId, attempt: 1, status: "running" },
      { type: "message.delta", seq: 2, run_id: runId, message_id: "msg_a", text: "seen " },
      { type: "run.cancel_requested", seq: 3, run_id: runId, reason: "user_pressed_stop", accepted_state_version: 4, resume_checkpoint_id: "cp_x" },
      { type: "message.delta", seq: 4, run_id: runId, message_id: "msg_a", text: "late " },
      { type: "message.delta", seq: 5, run_id: runId, message_id: "msg_b", text: "later" },
      {
        type: "run.cancelled",
        seq: 6,
        run_id: runId,
        reason: "user_pressed_stop",
        resume_checkpoint_id: "cp_x",
        discarded_stream_chars: 15,
        external_effects: [],
      },
    ];
    const body = frames.map((event) => `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
    // A stand-in server for this one stream: the chat id is the thread id, and that thread has this run active.
    const fakeFetch: typeof fetch = async (input) => {
      const url = String(input);
      if (url.endsWith(`/v1/threads/${threadId}`)) return Response.json({ thread_id: threadId, state_version: 4, active_run_id: runId });
      if (url.includes(`/v1/runs/${runId}/events`)) return new Response(body, { headers: { "content-type": "text/event-stream" } });
      return Response.json({ error: "not_found", message: "no" }, { status: 404 });
    };
    const transport = createTidemarkTransport({ baseUrl: "http://tidemark.invalid", fetch: fakeFetch });
    const chat = new TestChat({ id: threadId, transport, messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "hi" }] }] });
    await chat.resumeStream();
    expect(chat.status).toBe("ready");
    expect(chat.answer).toBe("seen ");
    expect(tidemarkOf(chat.messages.at(-1))).toMatchObject({ status: "cancelled", discarded_stream_chars: 15, resume_checkpoint_id: "cp_x" });
  });

  it("works without a UI framework (readUIMessageStream), and an approval goes through transport.client while the stream stays open", async () => {
    // The example of docs/client.md, "Without a UI framework" and "Approvals".
    const transport = createTidemarkTransport({ baseUrl: h.url });
    script = { kind: "demo" };
    const decide = async (text: string, decision: (runId: string) => Promise<unknown>) => {
      const stream = await transport.sendMessages({
        chatId: "vanilla",
        messageId: undefined,
        trigger: "submit-message",
        abortSignal: undefined,
        messages: [{ id: `user-${text.length}`, role: "user", parts: [{ type: "text", text }] }],
      });
      let last: UIMessage | undefined;
      const waited: unknown[] = [];
      const decided = new Set<string>();
      for await (const message of readUIMessageStream({ stream })) {
        last = message;
        const tidemark = tidemarkOf(message);
        const waiting = tidemark?.interrupted;
        if (!tidemark || !waiting || decided.has(waiting.op_id)) continue;
        decided.add(waiting.op_id);
        waited.push(waiting);
        await decision(tidemark.run_id);
      }
      return { last: last!, waited };
    };

    const approved = await decide("Please email ada@example.com that the quote is ready", (runId) => transport.client.approve(runId));
    expect(approved.waited).toEqual([expect.objectContaining({ tool: "send_email", preview: expect.objectContaining({ to: "***@example.com" }) })]);
    expect(tidemarkOf(approved.last)).toMatchObject({ status: "completed", interrupted: null });
    expect(textOf(approved.last)).toMatch(/handed to the outbox/);
    expect(outbox.list().map((record) => record.to)).toContain("ada@example.com");

    const rejected = await decide("Please email bob@example.com the draft", (runId) => transport.client.reject(runId, "not now"));
    expect(rejected.waited).toEqual([expect.objectContaining({ tool: "send_email" })]);
    expect(tidemarkOf(rejected.last)).toMatchObject({ status: "completed" });
    expect(textOf(rejected.last)).toMatch(/not sent/);
    expect(outbox.list().map((record) => record.to)).not.toContain("bob@example.com");
  });

  it("shows a server-executed tool call as a dynamic tool part with its input and output", async () => {
    const transport = createTidemarkTransport({ baseUrl: h.url });
    const chat = new TestChat({ id: "chat-tools", transport });
    script = { kind: "demo" };
    await chat.sendMessage({ text: "search for red shoes" });

    expect(chat.error).toBeUndefined();
    const parts = chat.messages.at(-1)!.parts;
    expect(parts.map((part) => part.type)).toEqual(["text", "dynamic-tool", "text"]);
    const tool = parts[1] as any;
    expect(tool).toMatchObject({ toolName: "search_catalog", state: "output-available", input: { query: expect.stringContaining("red shoes") } });
    expect(tool.output).toMatchObject({ query: expect.stringContaining("red shoes") });
    const messages = await history(transport.threadIdOf("chat-tools")!);
    expect(messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(textOf(chat.messages.at(-1)!)).toBe(messages[1].content + messages[3].content);
  });
});
