/**
 * An HTTP Stop aborts its run as soon as the request's headers are read (issue 18): before its
 * body arrives, before the rate limit and validation. The cancel is then recorded with the body's
 * reason; and if the request never gets that far (a body refused, a client gone before sending
 * it), the Stop still stands: the run ends `cancelled`, with the default reason, and nothing is
 * streamed or published after `run.cancel_requested`. Behind Tidemark's HTTP server the Stop is
 * taken by the server's request listener, before the app sees the request; an app mounted
 * elsewhere takes it in its own middleware.
 */
import { request as httpRequest, type ClientRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { createDemoModel, type ChatModel } from "../src/runtime/index.js";
import { createApp, createServerMetrics } from "../src/server/index.js";
import { startHarness, type Harness } from "./support/harness.js";

/** The demo model at a slow pace, telling when a generation's signal is aborted. */
function abortWatchingModel(): { model: ChatModel; nextAbort(): Promise<void> } {
  const demo = createDemoModel({ wordsPerSecond: 20, wordCount: 400 });
  let onAbort: (() => void) | undefined;
  return {
    nextAbort: () => new Promise<void>((resolve) => (onAbort = resolve)),
    model: {
      id: "demo",
      title: demo.title,
      stream(request, options) {
        options.signal.addEventListener("abort", () => onAbort?.(), { once: true });
        return demo.stream(request, options);
      },
    },
  };
}

const watcher = abortWatchingModel();
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ model: watcher.model });
});

afterAll(async () => {
  await h.expectNoViolations();
  await h.close();
});

/** A run streaming its answer: its events so far, read until its third delta. */
async function streamingRun(): Promise<string> {
  const threadId = await h.createThread();
  const run = await h.startRun(threadId, "Tell me a long story");
  await h.events(run.run_id, { until: (event) => event.type === "message.delta" && event.seq >= 4 });
  return run.run_id as string;
}

/** A cancel request with its headers sent and its body held back (`Content-Length` announces it). */
function cancelWithHeldBody(runId: string, body: string): { request: ClientRequest; reply: Promise<{ status: number; body: any }> } {
  const url = new URL(`${h.url}/v1/runs/${runId}/cancel`);
  const request = httpRequest(url, { method: "POST", headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } });
  const reply = new Promise<{ status: number; body: any }>((resolve, reject) => {
    request.on("response", (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on("end", () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    });
    request.on("error", reject);
  });
  request.flushHeaders();
  return { request, reply };
}

/** Nothing after the accepted cancel: no delta, no publication, and the stream ends `run.cancelled`. */
function expectNothingAfterCancel(events: readonly RunEvent[]): void {
  const cancelAt = events.findIndex((event) => event.type === "run.cancel_requested");
  expect(cancelAt).toBeGreaterThan(0);
  expect(events.slice(cancelAt).filter((event) => event.type === "message.delta" || event.type === "message.published")).toEqual([]);
  expect(events.at(-1)!.type).toBe("run.cancelled");
}

it("aborts the generation before the body arrives; the cancel is recorded with the body's reason", async () => {
  const runId = await streamingRun();
  const aborted = watcher.nextAbort();
  const { request, reply } = cancelWithHeldBody(runId, JSON.stringify({ reason: "changed my mind" }));
  // The generation's signal fires while the request's body has not been sent.
  await aborted;
  request.end(JSON.stringify({ reason: "changed my mind" }));
  const answer = await reply;
  expect(answer.status).toBe(202);
  expect(answer.body).toMatchObject({ run_id: runId, status: "cancel_requested", already_terminal: false });
  const events = await h.events(runId);
  expectNothingAfterCancel(events);
  expect(events.find((event) => event.type === "run.cancel_requested")).toMatchObject({ reason: "changed my mind" });
  expect((await h.api(`/v1/runs/${runId}`)).body).toMatchObject({ status: "cancelled", cancel_reason: "changed my mind" });
});

it("mounted without Tidemark's HTTP server (app.request), the app itself stops the run before the body arrives", async () => {
  const runId = await streamingRun();
  const app = createApp({ runtime: h.tidemark.runtime, metrics: createServerMetrics() });
  const aborted = watcher.nextAbort();
  let sendBody!: () => void;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      sendBody = () => {
        controller.enqueue(new TextEncoder().encode(JSON.stringify({ reason: "from a mounted app" })));
        controller.close();
      };
    },
  });
  const reply = app.request(`/v1/runs/${runId}/cancel`, { method: "POST", headers: { "content-type": "application/json" }, body, duplex: "half" } as RequestInit);
  await aborted;
  sendBody();
  const answer = await reply;
  expect(answer.status).toBe(202);
  const events = await h.events(runId);
  expectNothingAfterCancel(events);
  expect((await h.api(`/v1/runs/${runId}`)).body).toMatchObject({ status: "cancelled", cancel_reason: "from a mounted app" });
});

it("a Stop whose body is refused still stands: 400 for the body, and the run ends cancelled with the default reason", async () => {
  const runId = await streamingRun();
  const refused = await h.api(`/v1/runs/${runId}/cancel`, { method: "POST", json: { reason: 5 } });
  expect(refused.status).toBe(400);
  expect(refused.body.error).toBe("invalid_request");
  const events = await h.events(runId);
  expectNothingAfterCancel(events);
  expect((await h.api(`/v1/runs/${runId}`)).body).toMatchObject({ status: "cancelled", cancel_reason: "user_requested" });
});

it("a Stop whose client leaves before sending its body still stands", async () => {
  const runId = await streamingRun();
  const aborted = watcher.nextAbort();
  const { request, reply } = cancelWithHeldBody(runId, "{}");
  void reply.catch(() => undefined);
  await aborted;
  request.destroy();
  const events = await h.events(runId);
  expectNothingAfterCancel(events);
  expect((await h.api(`/v1/runs/${runId}`)).body).toMatchObject({ status: "cancelled", cancel_reason: "user_requested" });
});

it("two tabs Stop at once, one held at its headers: one cancel is recorded, both are answered, the run ends cancelled once", async () => {
  const runId = await streamingRun();
  const aborted = watcher.nextAbort();
  const first = cancelWithHeldBody(runId, JSON.stringify({ reason: "first tab" }));
  await aborted;
  // The second tab's Stop arrives whole while the first's body is still on its way: it records the Stop.
  const second = await h.api(`/v1/runs/${runId}/cancel`, { method: "POST", json: { reason: "second tab" } });
  expect(second.status).toBe(202);
  expect(second.body).toMatchObject({ status: "cancel_requested", already_terminal: false });
  first.request.end(JSON.stringify({ reason: "first tab" }));
  const late = await first.reply;
  expect([200, 202]).toContain(late.status);
  expect(late.body).toMatchObject({ run_id: runId, already_terminal: late.status === 200 });
  const events = await h.events(runId);
  expectNothingAfterCancel(events);
  expect(events.filter((event) => event.type === "run.cancel_requested")).toEqual([expect.objectContaining({ reason: "second tab" })]);
  expect(events.filter((event) => event.type === "run.cancelled")).toHaveLength(1);
  expect((await h.api(`/v1/runs/${runId}`)).body).toMatchObject({ status: "cancelled", cancel_reason: "second tab" });
});

it("a refused cancel of a run not executing here stops nothing: the run later created with that id runs to its end", async () => {
  const runId = "run_01jd8x0f1ae2rbv7c9ks0d8m5q";
  const refused = await h.api(`/v1/runs/${runId}/cancel`, { method: "POST", json: { reason: 5 } });
  expect(refused.status).toBe(400);
  const threadId = await h.createThread();
  await h.startRun(threadId, "Tell me a long story", { run_id: runId });
  const events = await h.events(runId, { until: (event) => event.type === "message.delta" && event.seq >= 4 });
  expect(events.map((event) => event.type)).not.toContain("run.cancel_requested");
  expect((await h.api(`/v1/runs/${runId}/cancel`, { method: "POST", json: {} })).status).toBe(202);
  expectNothingAfterCancel(await h.events(runId));
});

describe("behind API keys", () => {
  const tenantWatcher = abortWatchingModel();
  let keyed: Harness;

  beforeAll(async () => {
    keyed = await startHarness({
      model: tenantWatcher.model,
      apiKeys: new Map([
        ["key-a", "tenant-a"],
        ["key-b", "tenant-b"],
      ]),
    });
  });

  afterAll(async () => {
    await keyed.expectNoViolations();
    await keyed.close();
  });

  it("a Stop with another tenant's key, or a wrong one, stops nothing at the headers: the run streams on until its own tenant stops it", async () => {
    let isAborted = false;
    void tenantWatcher.nextAbort().then(() => (isAborted = true));
    const threadId = await keyed.createThread("key-a");
    const created = await keyed.api(`/v1/threads/${threadId}/runs`, { method: "POST", key: "key-a", json: { input: { role: "user", content: "Tell me a long story" } } });
    expect(created.status).toBe(201);
    const runId = created.body.run_id as string;
    const first = await keyed.events(runId, { key: "key-a", until: (event) => event.type === "message.delta" && event.seq >= 4 });
    const foreign = await keyed.api(`/v1/runs/${runId}/cancel`, { method: "POST", key: "key-b", json: { reason: "not yours" } });
    const wrongKey = await keyed.api(`/v1/runs/${runId}/cancel`, { method: "POST", key: "nope", json: {} });
    expect(wrongKey.status).toBe(401);
    expect(JSON.stringify(foreign.body)).not.toContain("Tell me");
    // Tenant A's run goes on streaming after both: more deltas, still running, its generation never aborted.
    const lastSeq = first.at(-1)!.seq;
    const later = await keyed.events(runId, { key: "key-a", after: lastSeq, until: (event) => event.type === "message.delta" && event.seq >= lastSeq + 3 });
    expect(later.map((event) => event.type)).not.toContain("run.cancel_requested");
    expect(isAborted).toBe(false);
    expect((await keyed.api(`/v1/runs/${runId}`, { key: "key-a" })).body.status).toBe("running");
    // Its own tenant's Stop does stop it.
    expect((await keyed.api(`/v1/runs/${runId}/cancel`, { method: "POST", key: "key-a", json: { reason: "mine" } })).status).toBe(202);
    const events = await keyed.events(runId, { key: "key-a" });
    expectNothingAfterCancel(events);
    expect(isAborted).toBe(true);
    expect((await keyed.api(`/v1/runs/${runId}`, { key: "key-a" })).body).toMatchObject({ status: "cancelled", cancel_reason: "mine" });
  });
});
