/** The stream's rules against a scripted fetch; test/client-event-stream.test.ts runs it over a real server. */
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../core/run-event.js";
import { createTidemarkClient } from "./api-client.js";
import { openRunEventStream, type RunEventStreamOptions, type StreamNotice } from "./event-stream.js";

const RUN_ID = "run_01jd8x0f1ae2rbv7c9ks0d8m5q";
const FAST_RETRY = { initialDelayMs: 1, maxDelayMs: 2, maxAttempts: 3 };

function frame(seq: number, type = "message.delta", fields: Record<string, unknown> = {}): string {
  const data = { type, seq, run_id: RUN_ID, ...(type === "message.delta" ? { message_id: "msg_1", text: `w${seq} ` } : {}), ...fields };
  return `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

const sse = (body: string): Response => new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
const json = (status: number, body: unknown): Response => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** Opens a stream whose fetch answers from `script`, one entry per request; records requests and notices. */
async function run(script: (() => Response)[], options: RunEventStreamOptions = {}) {
  const requests: { url: string; lastEventId: string | null }[] = [];
  const client = createTidemarkClient({
    baseUrl: "http://tidemark.test",
    fetch: async (input, init) => {
      requests.push({ url: String(input), lastEventId: new Headers(init?.headers).get("last-event-id") });
      const next = script.shift();
      if (!next) throw new TypeError("fetch failed");
      return next();
    },
  });
  const notices: StreamNotice[] = [];
  const stream = openRunEventStream(client, RUN_ID, (notice) => notices.push(notice), { retry: FAST_RETRY, ...options });
  await stream.done;
  const events = notices.flatMap((notice) => (notice.kind === "event" ? [notice.event] : []));
  const states = notices.flatMap((notice) => (notice.kind === "connection" ? [notice.state] : []));
  return { requests, notices, events, states, stream };
}

const seqs = (events: RunEvent[]) => events.map((event) => event.seq);

describe("openRunEventStream", () => {
  it("re-joins after a drop with Last-Event-ID and ?after=, and delivers each seq once, in order", async () => {
    const result = await run([
      () => sse(frame(1, "run.started", { attempt: 1, status: "running" }) + frame(2) + frame(3)),
      // The server replays from what it was told; an overlap is dropped, not shown twice.
      () => sse(frame(3) + frame(4) + frame(5, "run.completed", { state_version: 3, published_message_id: "msg_1" })),
    ]);
    expect(seqs(result.events)).toEqual([1, 2, 3, 4, 5]);
    expect(result.requests.map((request) => request.lastEventId)).toEqual([null, "3"]);
    expect(result.requests[1]!.url).toBe(`http://tidemark.test/v1/runs/${RUN_ID}/events?after=3`);
    expect(result.states).toEqual(["connecting", "connected", "reconnecting", "connected"]);
    expect(result.stream.lastSeq).toBe(5);
  });

  it("reports a seq that jumps within an attempt as a gap: reload, and the stream ends", async () => {
    const result = await run([() => sse(frame(1, "run.started", { attempt: 1 }) + frame(2) + frame(5) + frame(6))]);
    expect(seqs(result.events)).toEqual([1, 2]);
    expect(result.notices.at(-2)).toEqual({ kind: "reload", reason: "gap" });
    expect(result.notices.at(-1)).toMatchObject({ kind: "connection", state: "failed", failure: { reason: "stream_expired" } });
  });

  it("takes a later attempt's run.started as the next event, not a gap", async () => {
    const result = await run([
      () =>
        sse(
          frame(1, "run.started", { attempt: 1 }) +
            frame(2) +
            frame(1_000_000_001, "run.started", { attempt: 2 }) +
            frame(1_000_000_002, "run.completed", { state_version: 3, published_message_id: null }),
        ),
    ]);
    expect(seqs(result.events)).toEqual([1, 2, 1_000_000_001, 1_000_000_002]);
  });

  it.each([
    [404, "run_not_found", "not_found"],
    [401, "unauthorized", "unauthorized"],
    [400, "invalid_request", "server_error"],
  ])("a %s answer fails at once with a reason, no retry", async (status, code, reason) => {
    const result = await run([() => json(status, { error: code, message: "no" })]);
    expect(result.requests).toHaveLength(1);
    expect(result.notices.at(-1)).toEqual({ kind: "connection", state: "failed", failure: { reason, message: "no", attempts: 1 } });
  });

  it("410 stream_expired asks for a reload", async () => {
    const result = await run([() => json(410, { error: "stream_expired", message: "gone", history_url: "/v1/threads/t/history" })]);
    expect(result.notices).toContainEqual({ kind: "reload", reason: "expired" });
    expect(result.notices.at(-1)).toMatchObject({ state: "failed", failure: { reason: "stream_expired", attempts: 1 } });
  });

  it("retries 5xx answers with backoff and fails with server_error after the budget", async () => {
    const result = await run(Array.from({ length: 5 }, () => () => json(503, { error: "worker_unavailable", message: "busy" })));
    expect(result.requests).toHaveLength(FAST_RETRY.maxAttempts);
    expect(result.notices.at(-1)).toMatchObject({ state: "failed", failure: { reason: "server_error", attempts: 3 } });
  });

  it("fails with unreachable after the budget of network errors; `disconnected` never appears", async () => {
    const result = await run([]);
    expect(result.requests).toHaveLength(FAST_RETRY.maxAttempts);
    expect(result.states).toEqual(["connecting", "reconnecting", "failed"]);
    expect(result.notices.at(-1)).toMatchObject({ failure: { reason: "unreachable", attempts: 3 } });
  });

  it("a drop after bytes arrived starts the budget again", async () => {
    const partial = (from: number) => () => sse(frame(from) + frame(from + 1));
    const result = await run([() => sse(frame(1, "run.started", { attempt: 1 })), partial(2), partial(4), partial(6), partial(8)]);
    expect(seqs(result.events)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(result.requests).toHaveLength(5 + FAST_RETRY.maxAttempts - 1);
  });

  it("close() while waiting to retry ends in disconnected", async () => {
    const controller = new AbortController();
    const result = await run(
      [
        () => {
          // The first request fails; abort while the stream waits for its retry.
          queueMicrotask(() => controller.abort());
          return json(503, { error: "worker_unavailable", message: "busy" });
        },
      ],
      { signal: controller.signal, retry: { initialDelayMs: 60_000, maxAttempts: 5 } },
    );
    expect(result.states.at(-1)).toBe("disconnected");
    expect(result.notices.some((notice) => notice.kind === "connection" && notice.state === "failed")).toBe(false);
  });

  it("an already aborted signal disconnects without a request", async () => {
    const result = await run([() => sse(frame(1))], { signal: AbortSignal.abort() });
    expect(result.requests).toHaveLength(0);
    expect(result.states).toEqual(["disconnected"]);
  });
});
