/**
 * A subscriber too slow to keep up (issue 17, item 1), over a real server and a real socket that
 * stops reading: it is cut with a last SSE comment saying why (`subscriber_too_slow`) and the
 * event to resume after, or, when even that cannot drain in time, its socket is destroyed; either
 * way a reconnect with `Last-Event-ID` reads on without a gap or a repeat to the terminal event.
 */
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatModel } from "../src/runtime/index.js";
import { eventually } from "./support/eventually.js";
import { startHarness, type Harness } from "./support/harness.js";

/** Deltas of the long answer: several MB of frames, past what the kernel's socket buffers absorb. */
const DELTAS = 40_000;
const DELTA_TEXT = "z".repeat(200);

/** A model whose answer waits for `open()`, then streams {@link DELTAS} deltas at full speed. */
function createGatedLongModel() {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const model: ChatModel = {
    id: "long",
    async *stream(_request, options) {
      await gate;
      for (let index = 0; index < DELTAS; index++) {
        if (options.signal.aborted) return;
        yield { type: "text-delta", text: DELTA_TEXT };
        // As a provider's chunks arrive: over I/O turns, so the server writes while the answer goes on.
        if (index % 50 === 49) await new Promise(setImmediate);
      }
      yield { type: "finish", finishReason: "stop" };
    },
  };
  return { model, open };
}

interface Frame {
  id: number;
  type: string;
}

/** The whole SSE frames in a raw HTTP/1.1 response (chunk-size lines sit between writes, never inside a frame). */
function framesIn(raw: string): Frame[] {
  return [...raw.matchAll(/^id: (\d+)\nevent: ([a-z._]+)\ndata: \{[^\n]*\}\n\n/gm)].map((match) => ({ id: Number(match[1]), type: match[2]! }));
}

/** The `subscriber_too_slow` comment in a raw response, if it arrived. */
function farewellIn(raw: string): Record<string, unknown> | undefined {
  const match = /^: error (\{"error":"subscriber_too_slow"[^\n]*\})\n\n/m.exec(raw);
  return match ? (JSON.parse(match[1]!) as Record<string, unknown>) : undefined;
}

/** Opens the run's events on a raw socket, reads the response headers, then stops reading. */
async function openStalledReader(h: Harness, runId: string) {
  const { port } = new URL(h.url);
  const socket = net.connect(Number(port), "127.0.0.1");
  socket.on("error", () => undefined);
  const chunks: Buffer[] = [];
  const headers = new Promise<void>((resolve) => {
    socket.once("data", (chunk: Buffer) => {
      // The headers are flushed before any event: from here on the client reads nothing.
      socket.pause();
      chunks.push(chunk);
      resolve();
    });
  });
  socket.write(`GET /v1/runs/${runId}/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n`);
  await headers;
  expect(Buffer.concat(chunks).toString("utf8")).toMatch(/^HTTP\/1\.1 200 OK/);
  return {
    /** Reads everything the server still sends, until the response's last chunk or the connection's end. */
    async readToEnd(): Promise<string> {
      const ended = new Promise<void>((resolve) => {
        socket.once("close", () => resolve());
        socket.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          // The chunked response's terminator: the server may keep the connection open a while after it.
          if (chunk.toString("latin1").endsWith("\r\n0\r\n\r\n")) resolve();
        });
      });
      socket.resume();
      await ended;
      socket.destroy();
      return Buffer.concat(chunks).toString("utf8");
    },
  };
}

async function slowSubscribersCut(h: Harness): Promise<number> {
  const metrics = String((await h.api("/metrics")).body);
  return Number(/^tidemark_slow_subscribers_disconnected_total (\d+)$/m.exec(metrics)?.[1] ?? "0");
}

/** Reads the rest of the run after `lastEventId` and checks it follows on, gapless, to `run.completed`. */
async function expectResumesGapless(h: Harness, runId: string, lastEventId: number): Promise<void> {
  const rest = await h.events(runId, { lastEventId });
  expect(rest.length).toBeGreaterThan(0);
  expect(rest.map((event) => event.seq)).toEqual(rest.map((_, index) => lastEventId + 1 + index));
  expect(rest.at(-1)?.type).toBe("run.completed");
}

const harnesses: Harness[] = [];

afterEach(async () => {
  for (const h of harnesses.splice(0)) {
    await h.expectNoViolations();
    await h.close();
  }
});

describe("a slow SSE subscriber", () => {
  it("is told why it is cut and where to resume, then reads on with Last-Event-ID without a gap", async () => {
    const long = createGatedLongModel();
    const h = await startHarness({ model: long.model, maxBacklogEvents: 500, stallTimeoutMs: 60_000, farewellTimeoutMs: 60_000 });
    harnesses.push(h);
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "a long answer, please");
    const reader = await openStalledReader(h, run.run_id);
    long.open();
    await eventually(async () => expect(await slowSubscribersCut(h)).toBe(1), { what: "the slow subscriber to be cut" });

    // Reading again (within the bound), it gets every event written before the cut, in order,
    // then the comment naming the last of them, then the end of the response.
    const raw = await reader.readToEnd();
    const frames = framesIn(raw);
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.map((frame) => frame.id)).toEqual(frames.map((_, index) => index + 1));
    expect(frames.some((frame) => frame.type === "run.completed")).toBe(false);
    const lastId = frames.at(-1)!.id;
    const farewell = farewellIn(raw);
    expect(farewell).toMatchObject({ error: "subscriber_too_slow", last_event_id: lastId });
    expect(["backlog", "stalled"]).toContain(farewell?.cause);
    expect(raw.indexOf(": error {")).toBeGreaterThan(raw.lastIndexOf(`id: ${lastId}\n`));
    // The response was ended, not broken off.
    if (/^transfer-encoding: chunked\r$/im.test(raw)) expect(raw.endsWith("0\r\n\r\n")).toBe(true);

    await expectResumesGapless(h, run.run_id, lastId);
  });

  it("whose socket cannot drain even the last comment is destroyed; it resumes from the last event it got", async () => {
    const long = createGatedLongModel();
    const h = await startHarness({ model: long.model, maxBacklogEvents: 500, stallTimeoutMs: 60_000, farewellTimeoutMs: 50 });
    harnesses.push(h);
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "a long answer, please");
    const reader = await openStalledReader(h, run.run_id);
    long.open();
    await eventually(async () => expect(await slowSubscribersCut(h)).toBe(1), { what: "the slow subscriber to be cut" });
    // The run goes on without it.
    await h.events(run.run_id, { lastEventId: 0, until: (event) => event.type === "run.completed" });

    const raw = await reader.readToEnd();
    const frames = framesIn(raw);
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.map((frame) => frame.id)).toEqual(frames.map((_, index) => index + 1));
    expect(frames.some((frame) => frame.type === "run.completed")).toBe(false);
    const lastId = frames.at(-1)!.id;
    // Whatever reached it before the socket went, the comment (had it arrived) names its last event.
    const farewell = farewellIn(raw);
    if (farewell) expect(farewell.last_event_id).toBe(lastId);
    await expectResumesGapless(h, run.run_id, lastId);
  });
});
