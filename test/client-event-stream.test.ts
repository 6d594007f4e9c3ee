/** The client's event stream over a real server: drops, half-open connections, expiry, an unreachable server. */
import type { IncomingMessage } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTidemarkClient, openRunEventStream, type RunEventStreamOptions, type StreamNotice } from "../src/client/index.js";
import type { RunEvent } from "../src/core/index.js";
import { connectionStates, eventsOf } from "./support/client-session.js";
import { createFakeTime } from "./support/fake-timers.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";
import { startTcpProxy } from "./support/tcp-proxy.js";

/** Follows `runId` to its end; `onEvent` may break things mid-stream. */
async function follow(baseUrl: string, runId: string, options: RunEventStreamOptions = {}, onEvent?: (event: RunEvent) => void) {
  const notices: StreamNotice[] = [];
  const client = createTidemarkClient({ baseUrl });
  const stream = openRunEventStream(
    client,
    runId,
    (notice) => {
      notices.push(notice);
      if (notice.kind === "event") onEvent?.(notice.event);
    },
    options,
  );
  await stream.done;
  return { notices, events: eventsOf(notices), states: connectionStates(notices), stream };
}

const expectGaplessOnce = (events: RunEvent[]) => {
  expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
  expect(events.at(-1)!.type).toBe("run.completed");
};

describe("the client's event stream over a real server", () => {
  let h: Harness;
  const eventRequests: IncomingMessage[] = [];
  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 300, wordCount: 120 }, heartbeatMs: 50 });
    h.tidemark.server.server.on("request", (request: IncomingMessage) => {
      if (request.url?.includes("/events")) eventRequests.push(request);
    });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  const assistantText = async (threadId: string) => (await h.api(`/v1/threads/${threadId}/history`)).body.messages.at(-1).content;

  it("re-joins with Last-Event-ID after the server drops the connection mid-stream: no text lost or doubled", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    const before = eventRequests.length;
    const dropAt = new Set([5, 25]);
    const result = await follow(h.url, run.run_id, { retry: { initialDelayMs: 10 } }, (event) => {
      // Destroy the server's side of the socket carrying this stream, as a crashing proxy would.
      if (dropAt.delete(event.seq)) eventRequests.at(-1)!.socket.destroy();
    });
    expectGaplessOnce(result.events);
    expect(deltaText(result.events)).toBe(await assistantText(threadId));
    const requests = eventRequests.slice(before);
    expect(requests).toHaveLength(3);
    expect(requests.map((request) => request.headers["last-event-id"])).toEqual([undefined, "5", "25"]);
    expect(requests[1]!.url).toContain("?after=5");
    expect(result.states).toEqual(["connecting", "connected", "reconnecting", "connected", "reconnecting", "connected"]);
  });

  it("notices a half-open connection by its silence and re-joins through a new one", async () => {
    const proxy = await startTcpProxy(h.url);
    try {
      const threadId = await h.createThread();
      const run = await h.startRun(threadId);
      let isFrozen = false;
      const result = await follow(proxy.url, run.run_id, { heartbeatTimeoutMs: 400, retry: { initialDelayMs: 10 } }, (event) => {
        if (event.seq === 5 && !isFrozen) {
          isFrozen = true;
          proxy.freeze(); // the socket stays open, but no byte arrives any more
        }
      });
      expectGaplessOnce(result.events);
      expect(deltaText(result.events)).toBe(await assistantText(threadId));
      expect(result.states).toEqual(["connecting", "connected", "reconnecting", "connected"]);
      expect(proxy.connectionCount).toBeGreaterThanOrEqual(2); // fetch's pool may open a spare one
      await proxy.frozenClientClosed; // the client gave the silent connection up
    } finally {
      await proxy.close();
    }
  });

  it("fails as unreachable once the server is gone for the whole retry budget, never as disconnected", async () => {
    const proxy = await startTcpProxy(h.url);
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    const result = await follow(proxy.url, run.run_id, { retry: { initialDelayMs: 5, maxDelayMs: 20, maxAttempts: 4 } }, (event) => {
      if (event.seq === 3) void proxy.close();
    });
    // Events the proxy had already forwarded when it closed may still arrive: each once, in order.
    const seqs = result.events.map((event) => event.seq);
    expect(seqs.slice(0, 3)).toEqual([1, 2, 3]);
    expect(seqs).toEqual(seqs.map((_, index) => index + 1));
    expect(result.events.some((event) => event.type === "run.completed")).toBe(false);
    expect(result.states).toEqual(["connecting", "connected", "reconnecting", "failed"]);
    expect(result.notices.at(-1)).toMatchObject({ failure: { reason: "unreachable", attempts: 4 } });
    // The run itself never noticed: a lost client does not cancel it.
    await h.events(run.run_id);
    expect((await h.api(`/v1/runs/${run.run_id}`)).body.status).toBe("completed");
  });

  it("fails as unreachable when nothing listens at all", async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port: free } = server.address() as AddressInfo;
        server.close(() => resolve(free));
      });
    });
    const result = await follow(`http://127.0.0.1:${port}`, "run_01jd8x0f1ae2rbv7c9ks0d8m5q", { retry: { initialDelayMs: 5, maxAttempts: 3 } });
    expect(result.states).toEqual(["connecting", "reconnecting", "failed"]);
    expect(result.notices.at(-1)).toMatchObject({ failure: { reason: "unreachable", attempts: 3 } });
  });

  it("asks for a reload when the buffer does not hold the point it asks for (410 stream_expired)", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    const all = await h.events(run.run_id);
    const result = await follow(h.url, run.run_id, { afterSeq: all.at(-1)!.seq + 10 });
    expect(result.events).toEqual([]);
    expect(result.notices).toContainEqual({ kind: "reload", reason: "expired" });
    expect(result.notices.at(-1)).toMatchObject({ kind: "connection", state: "failed", failure: { reason: "stream_expired" } });
  });

  it("fails with not_found for an unknown run", async () => {
    const result = await follow(h.url, "run_01jd8x0f1ae2rbv7c9ks0d8m5q");
    expect(result.notices.at(-1)).toMatchObject({ state: "failed", failure: { reason: "not_found", attempts: 1 } });
  });

  it("close() is the only way to `disconnected`, and leaves the run going", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    const notices: StreamNotice[] = [];
    const stream = openRunEventStream(createTidemarkClient({ baseUrl: h.url }), run.run_id, (notice) => {
      notices.push(notice);
      if (notice.kind === "event" && notice.event.seq === 3) stream.close();
    });
    await stream.done;
    expect(connectionStates(notices)).toEqual(["connecting", "connected", "disconnected"]);
    expect(stream.lastSeq).toBe(3);
    const rest = await h.events(run.run_id, { after: 3 });
    expect(rest.at(-1)!.type).toBe("run.completed");
  });
});

describe("the client's event stream against an expired buffer and an API key", () => {
  const TTL_MS = 60_000;
  // The buffer's TTL runs on fake time: it ends when the test advances it.
  const time = createFakeTime();
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 0, wordCount: 10 }, eventTtlMs: TTL_MS, timers: time.timers, apiKeys: new Map([["key-a", "tenant-a"]]) });
  });
  afterAll(async () => {
    await h.close();
  });

  it("asks for a reload once the run's buffer expired, and fails as unauthorized without a key", async () => {
    const threadId = await h.createThread("key-a");
    const started = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "hi" } }, key: "key-a" });
    expect((await h.events(started.body.run_id, { key: "key-a" })).at(-1)?.type).toBe("run.completed");
    // The terminal event set the buffer's TTL timer; past it, the buffer is gone.
    await time.whenScheduled((timer) => !timer.isInterval && timer.ms === TTL_MS);
    await time.advance(TTL_MS);
    expect((await h.api(`/v1/runs/${started.body.run_id}/events`, { key: "key-a" })).status).toBe(410);
    const notices: StreamNotice[] = [];
    const client = createTidemarkClient({ baseUrl: h.url, apiKey: "key-a" });
    await openRunEventStream(client, started.body.run_id, (notice) => notices.push(notice)).done;
    expect(notices).toContainEqual({ kind: "reload", reason: "expired" });

    const anonymous: StreamNotice[] = [];
    await openRunEventStream(createTidemarkClient({ baseUrl: h.url }), started.body.run_id, (notice) => anonymous.push(notice)).done;
    expect(anonymous.at(-1)).toMatchObject({ state: "failed", failure: { reason: "unauthorized" } });
  });
});
