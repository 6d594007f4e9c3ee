/**
 * Input a store cannot hold is refused at the edge, the same way on SQLite and PostgreSQL
 * (issue 11 #17, #19): a path id that is not well-formed (a NUL in it, above all) is answered
 * exactly like an unknown id, and a JSON body that holds a NUL or nests deeper than 64 levels is
 * a 400 `invalid_request` naming the field, before anything happens.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createId, type RunEvent } from "../src/core/index.js";
import { createDemoModel, type ChatModel } from "../src/runtime/index.js";
import { createTestPostgresStore } from "../src/testing/postgres-test-database.js";
import { startHarness, type Harness } from "./support/harness.js";

/** The user message that makes {@link holdingModel} answer slowly enough to be stopped by hand. */
const HOLD = "hold until stopped";

/** The demo at full speed, except for {@link HOLD}: a word a second, for hours (only a Stop ends it). */
function holdingModel(): ChatModel {
  const fast = createDemoModel({ wordsPerSecond: 0, wordCount: 20 });
  const slow = createDemoModel({ wordsPerSecond: 1, wordCount: 100_000 });
  return {
    id: "demo",
    stream: (request, options) => (request.messages.at(-1)?.content === HOLD ? slow : fast).stream(request, options),
  };
}

/** A body `depth` containers deep, the deep part in `metadata.a` (`{"metadata":{"a":[…]}}` is 3 deep). */
function nestedMetadata(depth: number): string {
  const arrays = depth - 2;
  return `{"metadata":{"a":${"[".repeat(arrays)}${"]".repeat(arrays)}}}`;
}

/** `value` wrapped in `depth - 1` arrays, as the value of a body's field (so the body is `depth` deep). */
function nestedValue(depth: number): unknown {
  let value: unknown = [];
  for (let level = 2; level < depth; level++) value = [value];
  return value;
}

const stores: [string, () => Promise<Harness>][] = [
  ["SQLite", () => startHarness({ model: holdingModel() })],
  ["PostgreSQL", async () => startHarness({ model: holdingModel(), store: await createTestPostgresStore() })],
];

describe.each(stores)("on %s", (_name, start) => {
  let h: Harness;
  let threadId: string;
  let runId: string;
  let checkpointId: string;
  beforeAll(async () => {
    h = await start();
    threadId = await h.createThread();
    runId = (await h.startRun(threadId, "a first question")).run_id;
    await h.events(runId);
    checkpointId = (await h.api(`/v1/threads/${threadId}`)).body.head_checkpoint_id;
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  /** Status, content type and the body's exact bytes. */
  async function answer(path: string, init: { method?: string; json?: unknown } = {}) {
    const response = await fetch(`${h.url}${path}`, {
      method: init.method ?? "GET",
      headers: init.json === undefined ? {} : { "content-type": "application/json" },
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
    });
    return { status: response.status, type: response.headers.get("content-type"), body: await response.text() };
  }

  const threadState = async () => {
    const { body } = await h.api(`/v1/threads/${threadId}`);
    return { state_version: body.state_version, head_checkpoint_id: body.head_checkpoint_id, metadata: body.metadata, title: body.title };
  };

  describe("a path id that is not well-formed is answered exactly like an unknown one", () => {
    // Raw path segments: percent-encoded NULs, a real id with a NUL after it, too long, not UTF-8.
    const malformed = (id: () => string) => ["%00", `${id()}%00`, `%00${id()}`, `${id().slice(0, 4)}%00`, "x".repeat(101), "%FF%FE"];

    const threadRoutes: [string, (thread: string) => string, { method?: string; json?: unknown }][] = [
      ["GET thread", (thread) => `/v1/threads/${thread}`, {}],
      ["DELETE thread", (thread) => `/v1/threads/${thread}`, { method: "DELETE" }],
      ["GET history", (thread) => `/v1/threads/${thread}/history`, {}],
      ["GET checkpoints", (thread) => `/v1/threads/${thread}/checkpoints`, {}],
      ["GET operations", (thread) => `/v1/threads/${thread}/operations`, {}],
      ["POST runs", (thread) => `/v1/threads/${thread}/runs`, { method: "POST", json: { input: { role: "user", content: "hi" } } }],
      ["POST fork", (thread) => `/v1/threads/${thread}/fork`, { method: "POST", json: { from_checkpoint_id: "cp_01jd8x0f1ae2rbv7c9ks0d8m5q" } }],
      [
        "POST confirm",
        (thread) => `/v1/threads/${thread}/operations/${createId("op")}/confirm`,
        { method: "POST", json: { outcome: "not_committed" } },
      ],
      ["DELETE message", (thread) => `/v1/threads/${thread}/messages/${createId("msg")}`, { method: "DELETE" }],
    ];

    it.each(threadRoutes)("%s: thread_not_found", async (_route, path, init) => {
      const unknown = await answer(path(createId("thr")), init);
      expect(unknown).toMatchObject({ status: 404, body: JSON.stringify({ error: "thread_not_found", message: "No such thread." }) });
      for (const id of malformed(() => threadId)) expect(await answer(path(id), init), id).toEqual(unknown);
      // The real thread is untouched (DELETE included).
      expect((await h.api(`/v1/threads/${threadId}`)).status).toBe(200);
    });

    const runRoutes: [string, (run: string) => string, { method?: string; json?: unknown }][] = [
      ["GET run", (run) => `/v1/runs/${run}`, {}],
      ["GET events", (run) => `/v1/runs/${run}/events`, {}],
      ["POST approve", (run) => `/v1/runs/${run}/approve`, { method: "POST", json: {} }],
      ["POST reject", (run) => `/v1/runs/${run}/reject`, { method: "POST", json: { reason: "no" } }],
      ["POST fragments", (run) => `/v1/runs/${run}/fragments`, { method: "POST", json: { message_id: createId("msg"), last_seq: 1 } }],
    ];

    it.each(runRoutes)("%s: run_not_found", async (_route, path, init) => {
      const unknown = await answer(path(createId("run")), init);
      expect(unknown).toMatchObject({ status: 404, body: JSON.stringify({ error: "run_not_found", message: "No such run." }) });
      for (const id of malformed(() => runId)) expect(await answer(path(id), init), id).toEqual(unknown);
    });

    it("POST cancel: run_not_found, as for any id that can never name a run (a well-formed unknown one is remembered)", async () => {
      const notFound = await answer(`/v1/runs/${createId("run")}`);
      for (const id of malformed(() => runId)) {
        expect(await answer(`/v1/runs/${id}/cancel`, { method: "POST", json: { reason: "stop" } }), id).toEqual(notFound);
        expect(await answer(`/v1/runs/${id}/cancel?wait=100`, { method: "POST" }), id).toEqual(notFound);
      }
      expect((await h.api(`/v1/runs/${runId}`)).body.status).toBe("completed");
    });

    it("a malformed message or operation id in a real thread: message_not_found, operation_not_found", async () => {
      const unknownMessage = await answer(`/v1/threads/${threadId}/messages/${createId("msg")}`, { method: "DELETE" });
      expect(unknownMessage).toMatchObject({ status: 404, body: expect.stringContaining('"error":"message_not_found"') });
      const confirm = { method: "POST", json: { outcome: "committed" } };
      const unknownOperation = await answer(`/v1/threads/${threadId}/operations/${createId("op")}/confirm`, confirm);
      expect(unknownOperation).toMatchObject({ status: 404, body: expect.stringContaining('"error":"operation_not_found"') });
      const messageId = (await h.api(`/v1/threads/${threadId}/history`)).body.messages[0].message_id as string;
      for (const id of malformed(() => messageId)) {
        expect(await answer(`/v1/threads/${threadId}/messages/${id}`, { method: "DELETE" }), id).toEqual(unknownMessage);
        expect(await answer(`/v1/threads/${threadId}/operations/${id}/confirm`, confirm), id).toEqual(unknownOperation);
      }
    });

    it("a run a client named with any id the create accepts is found by its path", async () => {
      // Well-formed (run_ and 26 lower-case letters and digits), though not a TypeID the server would make.
      const named = `run_${"z".repeat(26)}`;
      const created = await h.api(`/v1/threads/${await h.createThread()}/runs`, {
        method: "POST",
        json: { input: { role: "user", content: "named by the client" }, run_id: named },
      });
      expect(created.status).toBe(201);
      expect((await h.events(named)).at(-1)?.type).toBe("run.completed");
      expect((await h.api(`/v1/runs/${named}`)).body).toMatchObject({ run_id: named, status: "completed" });
      expect((await h.api(`/v1/runs/${named}/cancel`, { method: "POST" })).body).toMatchObject({ run_id: named, already_terminal: true });
    });

    it("and the thread list's cursor with a NUL is a 400, as before", async () => {
      expect((await answer("/v1/threads?before=%00")).status).toBe(400);
    });
  });

  describe("text with a NUL in a JSON body is a 400 invalid_request naming the field", () => {
    const nul = "a\u0000b";
    const cases: [string, () => string, unknown, string][] = [
      ["thread metadata value", () => "/v1/threads", { metadata: { topic: nul } }, "metadata.topic"],
      ["thread metadata key", () => "/v1/threads", { metadata: { [nul]: 1 } }, "metadata"],
      ["nested metadata", () => "/v1/threads", { metadata: { list: ["ok", { deep: nul }] } }, "metadata.list.1.deep"],
      ["run input", () => `/v1/threads/${threadId}/runs`, { input: { role: "user", content: nul } }, "input.content"],
      ["run input, NUL alone", () => `/v1/threads/${threadId}/runs`, { input: { role: "user", content: "\u0000" } }, "input.content"],
      ["client-named run id", () => `/v1/threads/${threadId}/runs`, { input: { role: "user", content: "x" }, run_id: `run_${nul}` }, "run_id"],
      [
        "resume checkpoint id",
        () => `/v1/threads/${threadId}/runs`,
        { resume_from_checkpoint_id: `${checkpointId}\u0000` },
        "resume_from_checkpoint_id",
      ],
      ["fork checkpoint id", () => `/v1/threads/${threadId}/fork`, { from_checkpoint_id: `${checkpointId}\u0000` }, "from_checkpoint_id"],
      ["fork metadata", () => `/v1/threads/${threadId}/fork`, { from_checkpoint_id: checkpointId, metadata: { note: nul } }, "metadata.note"],
      ["cancel reason", () => `/v1/runs/${runId}/cancel`, { reason: nul }, "reason"],
      ["approve reason", () => `/v1/runs/${runId}/approve`, { reason: nul }, "reason"],
      ["reject reason", () => `/v1/runs/${runId}/reject`, { reason: nul }, "reason"],
      ["fragment message id", () => `/v1/runs/${runId}/fragments`, { message_id: `msg_${nul}`, last_seq: 1 }, "message_id"],
      [
        "confirmed result",
        () => `/v1/threads/${threadId}/operations/${createId("op")}/confirm`,
        { outcome: "committed", result: { text: nul } },
        "result.text",
      ],
      ["an unknown field", () => `/v1/threads/${threadId}/runs`, { input: { role: "user", content: "x" }, [nul]: nul }, "body"],
    ];

    it.each(cases)("%s", async (_name, path, body, field) => {
      const before = await threadState();
      const threads = (await h.api("/v1/threads?limit=100")).body.threads.length;

      const response = await h.api(path(), { method: "POST", json: body });

      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error: "invalid_request",
        message: expect.stringContaining(`${field}:`),
        issues: [{ path: field === "body" ? "" : field, message: expect.stringContaining("U+0000") }],
      });
      expect(response.body.message).toContain("U+0000");
      expect(await threadState()).toEqual(before);
      expect((await h.api("/v1/threads?limit=100")).body.threads.length).toBe(threads);
    });

    it("a Stop whose reason holds a NUL: 400 naming the field, the NUL kept nowhere; the run, stopped at the request's headers, ends cancelled with the default reason", async () => {
      // The run executes here, so the Stop aborted it before its body was read (issue 18; decision
      // 015): the refused body cannot undo that, and the cancel is recorded without the bad reason.
      const holdingThread = await h.createThread();
      const run = await h.startRun(holdingThread, HOLD);
      await h.events(run.run_id, { until: (event: RunEvent) => event.type === "message.delta" });

      for (const wait of ["", "?wait=5000"]) {
        const refused = await h.api(`/v1/runs/${run.run_id}/cancel${wait}`, { method: "POST", json: { reason: "user\u0000pressed stop" } });
        expect(refused.status).toBe(400);
        expect(refused.body).toMatchObject({ error: "invalid_request", issues: [{ path: "reason" }] });
      }
      const events = await h.events(run.run_id);
      expect(events.at(-1)!.type).toBe("run.cancelled");
      expect(JSON.stringify(events)).not.toContain("\\u0000");
      expect((await h.api(`/v1/runs/${run.run_id}`)).body).toMatchObject({ status: "cancelled", cancel_reason: "user_requested" });

      const again = await h.api(`/v1/runs/${run.run_id}/cancel?wait=30000`, { method: "POST", json: { reason: "user pressed stop" } });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: "cancelled", already_terminal: true });
      expect((await h.api(`/v1/runs/${run.run_id}`)).body).toMatchObject({ status: "cancelled", cancel_reason: "user_requested" });
      const history = (await h.api(`/v1/threads/${holdingThread}/history`)).body;
      expect(history.markers).toEqual([expect.objectContaining({ type: "interrupted_response", run_id: run.run_id })]);
    });

    it("text without a NUL, control characters and all, is stored and read back as sent", async () => {
      const text = "tab\there \u0001\u001f\u007f é 🌊";
      const created = await h.api("/v1/threads", { method: "POST", json: { metadata: { [text]: text } } });
      expect(created.status).toBe(201);
      expect((await h.api(`/v1/threads/${created.body.thread_id}`)).body.metadata).toEqual({ [text]: text });
      const run = await h.startRun(created.body.thread_id, text);
      await h.events(run.run_id);
      expect((await h.api(`/v1/threads/${created.body.thread_id}/history`)).body.messages[0].content).toBe(text);
    });
  });

  describe("a JSON body nested deeper than 64 levels is a 400 invalid_request", () => {
    it("64 levels are accepted and read back; 65 are refused", async () => {
      const accepted = await answer("/v1/threads", { method: "POST", json: JSON.parse(nestedMetadata(64)) });
      expect(accepted.status).toBe(201);
      const thread = JSON.parse(accepted.body);
      expect((await h.api(`/v1/threads/${thread.thread_id}`)).body.metadata).toEqual(JSON.parse(nestedMetadata(64)).metadata);

      const refused = await h.api("/v1/threads", { method: "POST", json: JSON.parse(nestedMetadata(65)) });
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({
        error: "invalid_request",
        message: "The request is not valid: metadata: nests objects and arrays deeper than 64 levels",
        issues: [{ path: "metadata", message: "nests objects and arrays deeper than 64 levels" }],
      });
    });

    it("a 10 KB body 4,100 levels deep on thread create and fork (a stack overflow before)", async () => {
      const before = await threadState();
      const deep = nestedMetadata(4_100);
      expect(deep.length).toBeGreaterThan(8_000);
      const post = (path: string, body: string) =>
        fetch(`${h.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body });

      const create = await post("/v1/threads", deep);
      const fork = await post(`/v1/threads/${threadId}/fork`, deep.replace('{"metadata"', `{"from_checkpoint_id":"${checkpointId}","metadata"`));

      for (const response of [create, fork]) {
        expect(response.status).toBe(400);
        expect(await response.json()).toMatchObject({ error: "invalid_request", issues: [{ path: "metadata" }] });
      }
      expect(await threadState()).toEqual(before);
    });

    it("every route with a body refuses it, before anything happens", async () => {
      const before = await threadState();
      const deep = nestedValue(65);
      const routes: [string, Record<string, unknown>, string][] = [
        [`/v1/threads/${threadId}/runs`, { input: deep }, "input"],
        [`/v1/threads/${threadId}/runs`, { input: { role: "user", content: "x" }, run_id: deep }, "run_id"],
        [`/v1/threads/${threadId}/fork`, { from_checkpoint_id: checkpointId, metadata: { a: deep } }, "metadata"],
        [`/v1/runs/${runId}/cancel`, { reason: deep }, "reason"],
        [`/v1/runs/${createId("run")}/cancel`, { reason: deep }, "reason"],
        [`/v1/runs/${runId}/approve`, { reason: deep }, "reason"],
        [`/v1/runs/${runId}/reject`, { reason: deep }, "reason"],
        [`/v1/runs/${runId}/fragments`, { message_id: deep, last_seq: 1 }, "message_id"],
        [`/v1/threads/${threadId}/operations/${createId("op")}/confirm`, { outcome: "committed", result: deep }, "result"],
      ];
      for (const [path, body, field] of routes) {
        const response = await h.api(path, { method: "POST", json: body });
        expect(response.status, path).toBe(400);
        expect(response.body, path).toMatchObject({ error: "invalid_request", issues: [{ path: field, message: expect.stringContaining("64 levels") }] });
      }
      // A top-level array that deep, too.
      const array = await h.api("/v1/threads", { method: "POST", json: nestedValue(66) });
      expect(array.body).toMatchObject({ error: "invalid_request", issues: [{ path: "" }] });
      expect(await threadState()).toEqual(before);
    });
  });
});
