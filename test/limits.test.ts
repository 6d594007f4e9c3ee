/**
 * The limits a user expects (issue 17, item 1), each with its stable code, over a real server:
 * a tenant's request rate, its active and queued runs, the input's length, its open event streams
 * (per run and per tenant, every layer's together) and slow requests. Time is fake for the rate;
 * the header timeout is the server's own timer, and the test waits for the server's answer.
 */
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.js";
import { startHarness, type Harness } from "./support/harness.js";
import { createHeldModel } from "./support/held-model.js";

const KEYS = new Map([
  ["tm-key-a", "tenant-a"],
  ["tm-key-b", "tenant-b"],
]);

const harnesses: Harness[] = [];

async function harnessWith(options: Parameters<typeof startHarness>[0]): Promise<Harness> {
  const h = await startHarness({ apiKeys: KEYS, ...options });
  harnesses.push(h);
  return h;
}

afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    await h.expectNoViolations();
    await h.close();
  }
});

async function startRun(h: Harness, key: string, threadId: string, content: string, extra: Record<string, unknown> = {}) {
  return h.api(`/v1/threads/${threadId}/runs`, { method: "POST", key, json: { input: { role: "user", content }, ...extra } });
}

describe("limits", () => {
  it("a tenant's request rate: past its burst, 429 rate_limited with Retry-After, on every layer; other tenants and refused keys are not counted", async () => {
    let now = 1_000_000;
    const h = await harnessWith({ rateLimit: { requestsPerSecond: 2, burst: 3, now: () => now } });
    for (let i = 0; i < 3; i++) expect((await h.api("/v1/agents", { key: "tm-key-a" })).status).toBe(200);
    const refused = await h.api("/v1/agents", { key: "tm-key-a" });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: "rate_limited", retry_after_s: 1 });
    expect(refused.headers.get("retry-after")).toBe("1");
    // The compatibility layers share the tenant's bucket.
    expect((await h.api("/langgraph/assistants/search", { method: "POST", key: "tm-key-a", json: {} })).status).toBe(429);
    expect((await h.api("/v1/models", { key: "tm-key-a" })).status).toBe(429);
    // Another tenant has its own; a wrong key is refused by auth, not counted.
    expect((await h.api("/v1/agents", { key: "tm-key-b" })).status).toBe(200);
    expect((await h.api("/v1/agents", { key: "tm-wrong" })).status).toBe(401);
    // Half a second refills one request.
    now += 500;
    expect((await h.api("/v1/agents", { key: "tm-key-a" })).status).toBe(200);
    expect((await h.api("/v1/agents", { key: "tm-key-a" })).status).toBe(429);
    // Operators see the refusals by code, every layer's.
    const metrics = String((await h.api("/metrics")).body);
    expect(metrics).toContain('tidemark_requests_rejected_total{code="rate_limited"} 4');
    expect(metrics).toContain('tidemark_requests_rejected_total{code="unauthorized"} 1');
  });

  it.each(["sqlite", "postgres"] as const)("a tenant's active and queued runs (%s): past either, 429 too_many_runs with Retry-After; a run that ends frees its place", async (storeKind) => {
    const held = createHeldModel();
    const h = await harnessWith({ storeKind, model: held.model, limits: { maxActiveRunsPerTenant: 2, maxQueuedRunsPerTenant: 1 } });
    const threads = await Promise.all([1, 2, 3].map(() => h.createThread("tm-key-a")));
    const first = await startRun(h, "tm-key-a", threads[0]!, "hold one");
    expect(first.status).toBe(201);
    expect((await startRun(h, "tm-key-a", threads[1]!, "hold two")).status).toBe(201);
    const third = await startRun(h, "tm-key-a", threads[2]!, "hold three");
    expect(third.status).toBe(429);
    expect(third.body).toMatchObject({ error: "too_many_runs", queue: "active", limit: 2 });
    expect(third.headers.get("retry-after")).toBe("1");
    // Nothing of the refused create was kept.
    expect((await h.api(`/v1/threads/${threads[2]}/history`, { key: "tm-key-a" })).body.messages).toEqual([]);
    // The queue behind a busy thread has its own limit.
    expect((await startRun(h, "tm-key-a", threads[0]!, "after one", { multitask: "enqueue" })).status).toBe(201);
    const queuedPast = await startRun(h, "tm-key-a", threads[1]!, "after two", { multitask: "enqueue" });
    expect(queuedPast.status).toBe(429);
    expect(queuedPast.body).toMatchObject({ error: "too_many_runs", queue: "queued", limit: 1 });
    // Another tenant is not held back by this one.
    const otherThread = await h.createThread("tm-key-b");
    expect((await startRun(h, "tm-key-b", otherThread, "hello")).status).toBe(201);

    // A Stop ends the first run (the one queued behind it then runs and ends), the second is let go.
    await h.api(`/v1/runs/${first.body.run_id}/cancel?wait=30000`, { method: "POST", key: "tm-key-a", json: {} });
    held.release();
    const freed = await eventually(async () => {
      const response = await startRun(h, "tm-key-a", threads[2]!, "three, at last");
      expect(response.status).toBe(201);
      return response;
    }, { what: "a place freed by the runs that ended" });
    await h.api(`/v1/runs/${freed.body.run_id}/cancel?wait=30000`, { method: "POST", key: "tm-key-a", json: {} });
  });

  it("the input's length: past the limit, 413 input_too_long on every layer; at it, accepted", async () => {
    const h = await harnessWith({ limits: { maxInputChars: 10 } });
    const threadId = await h.createThread("tm-key-a");
    const long = await startRun(h, "tm-key-a", threadId, "x".repeat(11));
    expect(long.status).toBe(413);
    expect(long.body).toMatchObject({ error: "input_too_long", limit: 10 });
    const openai = await h.api("/v1/responses", { method: "POST", key: "tm-key-a", json: { model: "chat", input: "y".repeat(11) } });
    expect(openai.status).toBe(413);
    const run = await startRun(h, "tm-key-a", threadId, "x".repeat(10));
    expect(run.status).toBe(201);
    await h.events(run.body.run_id, { key: "tm-key-a" });
  });

  it("open event streams: past the run's or the tenant's limit, 429 too_many_streams (every layer's streams count); a closed stream frees its slot", async () => {
    const held = createHeldModel();
    const h = await harnessWith({ model: held.model, limits: { maxStreamsPerRun: 2, maxStreamsPerTenant: 3 } });
    const [threadA, threadB] = await Promise.all([h.createThread("tm-key-a"), h.createThread("tm-key-a")]);
    const runA = (await startRun(h, "tm-key-a", threadA, "hold a")).body.run_id as string;
    const runB = (await startRun(h, "tm-key-a", threadB, "hold b")).body.run_id as string;
    const readers = new AbortController();
    const open = (path: string, init: RequestInit = {}) =>
      fetch(`${h.url}${path}`, { ...init, headers: { authorization: "Bearer tm-key-a", ...init.headers }, signal: readers.signal });
    const first = await open(`/v1/runs/${runA}/events`);
    const second = await open(`/langgraph/threads/${threadA}/runs/${runA}/stream`);
    expect([first.status, second.status]).toEqual([200, 200]);
    const third = await open(`/v1/runs/${runA}/events`);
    expect(third.status).toBe(429);
    expect(await third.json()).toMatchObject({ error: "too_many_streams", scope: "run", limit: 2 });
    const ofB = await open(`/v1/runs/${runB}/events`);
    expect(ofB.status).toBe(200);
    const pastTenant = await open(`/v1/runs/${runB}/events`);
    expect(pastTenant.status).toBe(429);
    expect(await pastTenant.json()).toMatchObject({ error: "too_many_streams", scope: "tenant", limit: 3 });
    // Another tenant's streams are its own.
    const otherThread = await h.createThread("tm-key-b");
    const otherRun = (await startRun(h, "tm-key-b", otherThread, "hello")).body.run_id as string;
    expect((await h.events(otherRun, { key: "tm-key-b" })).at(-1)?.type).toBe("run.completed");

    // Closing streams gives their slots back once the server sees the close.
    readers.abort();
    await eventually(async () => {
      const stream = new AbortController();
      const response = await fetch(`${h.url}/v1/runs/${runA}/events`, { headers: { authorization: "Bearer tm-key-a" }, signal: stream.signal });
      stream.abort();
      expect(response.status).toBe(200);
    }, { what: "the closed streams' slots to be free" });
    held.release();
    for (const runId of [runA, runB]) await h.api(`/v1/runs/${runId}/cancel?wait=30000`, { method: "POST", key: "tm-key-a", json: {} });
  });

  it("a client that sends its headers too slowly (slowloris) gets 408 request_timeout and its connection closed", async () => {
    const h = await harnessWith({ headersTimeoutMs: 300 });
    const { hostname, port } = new URL(h.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname);
      let received = "";
      socket.on("data", (chunk) => (received += chunk.toString()));
      socket.on("close", () => resolve(received));
      socket.on("error", reject);
      // Headers that never end.
      socket.write("GET /v1/agents HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n");
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toMatchObject({ error: "request_timeout" });
  });
});
