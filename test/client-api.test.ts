/** The typed API client over a real server: every endpoint, and errors as TidemarkApiError with the server's code. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTidemarkClient, TidemarkApiError, type TidemarkClient } from "../src/client/index.js";
import type { RunEvent } from "../src/core/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";

/** Resolves with the TidemarkApiError `promise` rejects with. */
async function apiError(promise: Promise<unknown>): Promise<TidemarkApiError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  if (!TidemarkApiError.isInstance(error)) throw new Error(`expected a TidemarkApiError, got ${String(error)}`);
  return error;
}

describe("the API client", () => {
  let h: Harness;
  let client: TidemarkClient;
  let outbox: DemoOutbox;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-client-api-"));
    outbox = createDemoOutbox(join(dir, "outbox.db"));
    h = await startHarness({ demo: { wordsPerSecond: 300, wordCount: 200 }, tools: createDemoTools({ outbox, searchDelayMs: 5 }) });
    client = createTidemarkClient({ baseUrl: `${h.url}/` });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    outbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("creates and reads threads, runs, history and checkpoints in the server's own shapes", async () => {
    const thread = await client.createThread({ metadata: { topic: "tides" } });
    expect(thread).toMatchObject({ state_version: 1, status: "idle", metadata: { topic: "tides" }, forked_from: null });
    expect(await client.getThread(thread.thread_id)).toEqual(thread);
    const run = await client.startRun(thread.thread_id, { input: { role: "user", content: "Hello" }, expected_state_version: 1 });
    expect(run).toMatchObject({ thread_id: thread.thread_id, state_version: 2, events_url: `/v1/runs/${run.run_id}/events` });
    expect(client.eventsUrl(run.run_id)).toBe(`${h.url}/v1/runs/${run.run_id}/events`);
    expect(client.eventsUrl(run.run_id, 7)).toBe(`${h.url}/v1/runs/${run.run_id}/events?after=7`);
    const events = await h.events(run.run_id);
    expect(await client.getRun(run.run_id)).toMatchObject({ status: "completed", published_message_id: expect.any(String) });
    const history = await client.getHistory(thread.thread_id);
    expect(history.messages.map((message) => [message.role, message.publication_status])).toEqual([
      ["user", "published"],
      ["assistant", "published"],
    ]);
    expect(history.messages[1]!.content).toBe(deltaText(events));
    expect((await client.getHistory(thread.thread_id, { limit: 1 })).messages).toHaveLength(1);
    const { checkpoints } = await client.listCheckpoints(thread.thread_id);
    expect(checkpoints.map((checkpoint) => checkpoint.kind)).toEqual(["thread_created", "input_accepted", "message_published"]);
  });

  it("createThread takes a title and metadata; renameThread sets the title without a new version", async () => {
    const thread = await client.createThread({ title: "Tides", metadata: { topic: "tides" } });
    expect(thread).toMatchObject({ title: "Tides", metadata: { topic: "tides" }, state_version: 1 });
    const renamed = await client.renameThread(thread.thread_id, "  Tides and moons ");
    expect(renamed).toMatchObject({ thread_id: thread.thread_id, title: "Tides and moons", state_version: 1 });
    expect(await client.getThread(thread.thread_id)).toMatchObject({ title: "Tides and moons", metadata: { topic: "tides" } });
    expect(await apiError(client.renameThread(thread.thread_id, "   "))).toMatchObject({ status: 400, code: "invalid_request" });
    await client.deleteThread(thread.thread_id);
    expect(await apiError(client.renameThread(thread.thread_id, "Gone"))).toMatchObject({ status: 404, code: "thread_not_found" });
  });

  it("names a run with an Idempotency-Key: a repeat is the same run", async () => {
    const thread = await client.createThread();
    const body = { input: { role: "user" as const, content: "once" } };
    const first = await client.startRun(thread.thread_id, body, { idempotencyKey: "client-test-key" });
    const again = await client.startRun(thread.thread_id, body, { idempotencyKey: "client-test-key" });
    expect(again.run_id).toBe(first.run_id);
    await h.events(first.run_id);
  });

  it("stops a run (?wait= until it is really cancelled), saves and deletes a fragment, forks the saved point", async () => {
    const thread = await client.createThread();
    const run = await client.startRun(thread.thread_id, { input: { role: "user", content: "Tell me a long story" } });
    const seen = await h.events(run.run_id, { until: (event) => event.type === "message.delta" && event.seq >= 4 });
    const cancel = await client.cancelRun(run.run_id, { reason: "user_pressed_stop", waitMs: 5_000 });
    expect(cancel).toMatchObject({ status: "cancelled", already_terminal: false, accepted_state_version: 3, resume_checkpoint_id: expect.any(String) });
    expect(await client.cancelRun(run.run_id)).toMatchObject({ already_terminal: true, status: "cancelled" });
    const delta = seen.at(-1) as Extract<RunEvent, { type: "message.delta" }>;
    const fragment = await client.saveFragment(run.run_id, { message_id: delta.message_id, last_seq: delta.seq });
    expect(fragment).toMatchObject({ publication_status: "fragment", content: deltaText(seen), state_version: 4 });
    const deleted = await client.deleteMessage(thread.thread_id, fragment.message_id);
    expect(deleted).toMatchObject({ message_id: fragment.message_id, publication_status: "deleted", state_version: 5 });
    const branch = await client.fork(thread.thread_id, { checkpoint_id: cancel.resume_checkpoint_id!, metadata: { why: "try again" } });
    expect(branch).toMatchObject({ status: "idle", state_version: 4, forked_from: { thread_id: thread.thread_id, checkpoint_id: cancel.resume_checkpoint_id } });
    expect(branch.metadata).toMatchObject({ why: "try again" });
    expect(await client.deleteThread(branch.thread_id)).toMatchObject({ thread_id: branch.thread_id, status: "deleted" });
  });

  it("approves and rejects a consequential operation and lists the ledger", async () => {
    const thread = await client.createThread();
    const run = await client.startRun(thread.thread_id, { input: { role: "user", content: "Please email ada@example.com that the quote is ready" } });
    await h.events(run.run_id, { until: (event) => event.type === "run.interrupted" });
    expect((await client.approve(run.run_id)).run_id).toBe(run.run_id);
    expect((await h.events(run.run_id)).at(-1)!.type).toBe("run.completed");
    const { operations } = await client.listOperations(thread.thread_id);
    expect(operations).toEqual([expect.objectContaining({ tool: "send_email", phase: "committed" })]);
    const notConfirmable = await apiError(client.confirmOperation(thread.thread_id, operations[0]!.op_id, { outcome: "committed" }));
    expect(notConfirmable).toMatchObject({ status: 409, code: "operation_not_confirmable" });

    const second = await client.startRun(thread.thread_id, { input: { role: "user", content: "email bob@example.com the draft" } });
    await h.events(second.run_id, { until: (event) => event.type === "run.interrupted" });
    await client.reject(second.run_id, "not now");
    expect((await h.events(second.run_id)).at(-1)!.type).toBe("run.completed");
    expect((await client.listOperations(thread.thread_id)).operations.map((operation) => operation.phase)).toEqual(["committed", "abandoned"]);
    expect(await apiError(client.approve(second.run_id))).toMatchObject({ status: 409, code: "run_not_interrupted" });
  });

  it("throws TidemarkApiError with the server's stable code and details", async () => {
    const missing = await apiError(client.getThread("thr_01jd8x0f1ae2rbv7c9ks0d8m5q"));
    expect(missing).toMatchObject({ name: "TidemarkApiError", status: 404, code: "thread_not_found" });
    expect(missing).toBeInstanceOf(Error);

    const thread = await client.createThread();
    const run = await client.startRun(thread.thread_id, { input: { role: "user", content: "first" } });
    const busy = await apiError(client.startRun(thread.thread_id, { input: { role: "user", content: "second" }, expected_state_version: 2 }));
    expect(busy).toMatchObject({ status: 409, code: "run_in_progress", details: { active_run_id: run.run_id } });
    const stale = await apiError(client.startRun(thread.thread_id, { input: { role: "user", content: "stale" }, expected_state_version: 1 }));
    expect(stale).toMatchObject({ status: 409, code: "state_version_conflict", details: { current_state_version: 2 } });
    expect(stale.details.allowed_actions).toEqual(["reload", expect.stringMatching(/^fork_from_cp_/)]);
    await h.events(run.run_id);
    const notTerminal = await apiError(client.saveFragment(run.run_id, { message_id: "msg_x", last_seq: 1 }));
    expect(notTerminal.code).toMatch(/^(message_already_published|fragment_out_of_range)$/);
    expect(await apiError(client.confirmOperation(thread.thread_id, "op_01jd8x0f1ae2rbv7c9ks0d8m5q", { outcome: "committed" }))).toMatchObject({
      status: 404,
      code: "operation_not_found",
    });
    expect(await apiError(client.startRun(thread.thread_id, {}))).toMatchObject({ status: 400, code: "invalid_request" });
  });

  it("rethrows a network failure as fetch's own TypeError, and an abort with the signal's reason", async () => {
    const nowhere = createTidemarkClient({ baseUrl: "http://127.0.0.1:9" });
    await expect(nowhere.getThread("thr_x")).rejects.toBeInstanceOf(TypeError);
    const reason = new Error("the user left");
    await expect(client.createThread(undefined, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    const controller = new AbortController();
    const thread = await client.createThread();
    const cancelling = client.startRun(thread.thread_id, { input: { role: "user", content: "abort me" } }, { signal: controller.signal });
    controller.abort();
    await expect(cancelling).rejects.toMatchObject({ name: "AbortError" });
  });
});

describe("the API client with API keys", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 0, wordCount: 5 }, apiKeys: new Map([["key-a", "tenant-a"], ["key-b", "tenant-b"]]) });
  });
  afterAll(async () => {
    await h.close();
  });

  it("sends the key as a bearer token; a missing key is unauthorized and another tenant's thread is not found", async () => {
    const alice = createTidemarkClient({ baseUrl: h.url, apiKey: "key-a" });
    expect(alice.headers()).toEqual({ authorization: "Bearer key-a" });
    const thread = await alice.createThread();
    expect((await alice.getThread(thread.thread_id)).thread_id).toBe(thread.thread_id);
    expect(await apiError(createTidemarkClient({ baseUrl: h.url }).getThread(thread.thread_id))).toMatchObject({ status: 401, code: "unauthorized" });
    const bob = createTidemarkClient({ baseUrl: h.url, apiKey: "key-b" });
    expect(await apiError(bob.getThread(thread.thread_id))).toMatchObject({ status: 404, code: "thread_not_found" });
  });
});
