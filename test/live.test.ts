/**
 * The live endpoint (DESIGN §12, issue 15): scripted speaking clients over a real WebSocket, a real
 * server and a real provider process. Speech timing is set per session (`session.update`) so that
 * each test waits for frames, never for time.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createOpenAICompatibleModel } from "../src/models/index.js";
import { connectLive, type LiveClient, type LiveFrame } from "./support/live-client.js";
import { startHarness, type Harness } from "./support/harness.js";
import { startProviderProcess, type ProviderProcess } from "./support/provider-process.js";

/** A slow answer: 400 chunks, one every 10 ms, so a barge-in always lands mid-answer. */
const SLOW = { chunks: 400, intervalMs: 10 };

let provider: ProviderProcess;
let harness: Harness;
const clients: LiveClient[] = [];
let markers = 0;

beforeAll(async () => {
  provider = await startProviderProcess(SLOW);
  harness = await startHarness({ model: createOpenAICompatibleModel({ model: "test", baseURL: provider.url }) });
});

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await harness.expectNoViolations();
});

afterAll(async () => {
  await harness?.close();
  await provider?.close();
});

async function openSession(threadId?: string, interruption: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const thread = threadId ?? (await harness.createThread());
  const client = await connectLive(harness.url, thread);
  clients.push(client);
  await client.next("session.ready", () => true, 0);
  if (Object.keys(interruption).length > 0 || Object.keys(extra).length > 0) {
    client.send({ type: "session.update", interruption, ...extra });
    await client.next("session.updated");
  }
  return { client, threadId: thread };
}

/** Says `words` (with a unique marker) and waits until the turn's answer has sent at least `chars` characters. */
async function speakAndHear(client: LiveClient, words: string, chars: number) {
  const transcript = `${words} [live ${++markers}]`;
  const from = client.frames.length;
  client.send({ type: "user.started_speaking" });
  client.send({ type: "user.stopped_speaking", transcript });
  const started = await client.next("turn.started", () => true, from);
  const messageId = started.message_id as string;
  await client.next("output.delta", () => client.sentText(messageId).length >= chars, from);
  return { transcript, runId: started.run_id as string, messageId };
}

async function history(threadId: string) {
  const { status, body } = await harness.api(`/v1/threads/${threadId}/history`);
  expect(status).toBe(200);
  return body as { messages: { message_id: string; role: string; content: string; interrupted: boolean; run_id: string }[] };
}

async function upstreamOf(transcript: string) {
  const snapshot = await provider.snapshot();
  return snapshot.requests.filter((request) => request.messages.includes(transcript));
}

describe("the live endpoint", () => {
  it("a barge-in after K heard characters publishes exactly K, marked interrupted, closes the upstream request, then answers the new turn", async () => {
    const { client, threadId } = await openSession(undefined, { min_interruption_ms: 0 });
    const turn = await speakAndHear(client, "Tell me a long story", 40);
    const K = 17;
    client.send({ type: "playback", message_id: turn.messageId, played_chars: K });
    client.send({ type: "user.started_speaking" });
    await client.next("output.paused");
    const from = client.frames.length;
    client.send({ type: "user.stopped_speaking", transcript: "Stop, tell me about the sea" });

    const interrupted = await client.next("turn.interrupted", () => true, from);
    expect(interrupted).toMatchObject({ run_id: turn.runId, message_id: turn.messageId, heard_chars: K, reason: "user_speech" });
    const sent = client.sentText(turn.messageId);
    const published = await client.next("message.published", (frame) => frame.message_id === turn.messageId, from);
    expect(published).toMatchObject({ content: sent.slice(0, K), interrupted: true });
    const ended = await client.next("turn.ended", (frame) => frame.run_id === turn.runId, from);
    expect(ended.status).toBe("cancelled");
    // No output of the cut turn after the interruption.
    const afterCut = client.frames.slice(client.frames.indexOf(interrupted));
    expect(afterCut.filter((frame) => frame.type === "output.delta" && frame.message_id === turn.messageId)).toEqual([]);

    // The next turn starts only once the cut run has ended.
    const next = await client.next("turn.started", (frame) => frame.run_id !== turn.runId, from);
    expect(client.frames.indexOf(next)).toBeGreaterThan(client.frames.indexOf(ended));
    const [upstream] = await upstreamOf(turn.transcript);
    expect(upstream?.socketClosedAt).toBeDefined();

    const { messages } = await history(threadId);
    const answer = messages.find((message) => message.message_id === turn.messageId);
    expect(answer).toMatchObject({ role: "assistant", content: sent.slice(0, K), interrupted: true, run_id: turn.runId });
    expect(messages.filter((message) => message.run_id === turn.runId && message.role === "assistant")).toHaveLength(1);
    // The next turn's model context holds exactly the heard part, never the unheard rest.
    const [nextUpstream] = await upstreamOf("Stop, tell me about the sea");
    expect(nextUpstream?.messages).toContain(JSON.stringify(sent.slice(0, K)).slice(1, -1));
    expect(nextUpstream?.messages).not.toContain(JSON.stringify(sent.slice(0, K + 5)).slice(1, -1));
    const checkpoints = (await harness.api(`/v1/threads/${threadId}/checkpoints`)).body as { checkpoints: { kind: string; run_id: string; message_id: string; cancelled_generation: { discarded_stream_chars: number } | null }[] };
    const cancel = checkpoints.checkpoints.find((checkpoint) => checkpoint.kind === "cancel_accepted" && checkpoint.run_id === turn.runId);
    expect(cancel?.message_id).toBe(turn.messageId);
    expect(cancel?.cancelled_generation?.discarded_stream_chars).toBeGreaterThanOrEqual(sent.length - K);
  });

  it("a cough (speech shorter than the minimum) interrupts nothing: the answer goes on", async () => {
    const { client } = await openSession(undefined, { min_interruption_ms: 60_000 });
    const turn = await speakAndHear(client, "Count for me", 10);
    const from = client.frames.length;
    client.send({ type: "user.started_speaking" });
    client.send({ type: "user.stopped_speaking", transcript: "" });
    const before = client.sentText(turn.messageId).length;
    await client.next("output.delta", () => client.sentText(turn.messageId).length > before + 20, from);
    expect(client.frames.slice(from).map((frame) => frame.type)).not.toContain("output.paused");
    expect(client.frames.slice(from).map((frame) => frame.type)).not.toContain("turn.interrupted");
    client.send({ type: "emergency_stop" });
    await client.next("turn.ended", (frame) => frame.run_id === turn.runId, from);
  });

  it("a typed transcript (no speech before it) cuts the answer at what was heard and is the next turn, whatever the minimum duration", async () => {
    const { client, threadId } = await openSession(undefined, { min_interruption_ms: 60_000 });
    const turn = await speakAndHear(client, "Describe the harbour", 30);
    const K = 12;
    client.send({ type: "playback", message_id: turn.messageId, played_chars: K });
    const from = client.frames.length;
    client.send({ type: "user.stopped_speaking", transcript: "Typed: what about the lighthouse?" });

    const interrupted = await client.next("turn.interrupted", () => true, from);
    expect(interrupted).toMatchObject({ run_id: turn.runId, message_id: turn.messageId, heard_chars: K, reason: "user_speech" });
    const published = await client.next("message.published", (frame) => frame.message_id === turn.messageId, from);
    expect(published).toMatchObject({ content: client.sentText(turn.messageId).slice(0, K), interrupted: true });
    expect(client.frames.slice(from).map((frame) => frame.type)).not.toContain("output.paused");
    const next = await client.next("turn.started", (frame) => frame.run_id !== turn.runId, from);
    client.send({ type: "emergency_stop" });
    await client.next("turn.ended", (frame) => frame.run_id === next.run_id, from);
    const { messages } = await history(threadId);
    expect(messages.map((message) => [message.role, message.interrupted])).toEqual([
      ["user", false],
      ["assistant", true],
      ["user", false],
    ]);
    expect((await upstreamOf("Typed: what about the lighthouse?")).length).toBe(1);
  });

  it("a false interruption pauses the output, then resumes it", async () => {
    const { client } = await openSession(undefined, { min_interruption_ms: 0, false_interruption_timeout_ms: 0 });
    const turn = await speakAndHear(client, "Explain the tides", 10);
    const from = client.frames.length;
    client.send({ type: "user.started_speaking" });
    await client.next("output.paused", () => true, from);
    client.send({ type: "user.stopped_speaking", transcript: "" });
    const resumed = await client.next("output.resumed", () => true, from);
    const paused = client.frames.findIndex((frame, index) => index >= from && frame.type === "output.paused");
    // Nothing was sent while paused; the held deltas follow the resume.
    expect(client.frames.slice(paused, client.frames.indexOf(resumed)).filter((frame) => frame.type === "output.delta")).toEqual([]);
    await client.next("output.delta", (frame) => frame.message_id === turn.messageId, client.frames.indexOf(resumed));
    client.send({ type: "emergency_stop" });
    const interrupted = await client.next("turn.interrupted", () => true, from);
    expect(interrupted.reason).toBe("emergency_stop");
  });

  it("an uninterruptible answer survives a barge-in, not an emergency stop", async () => {
    const { client, threadId } = await openSession(undefined, { min_interruption_ms: 0, interruptible: false });
    const turn = await speakAndHear(client, "Read the safety notice", 10);
    expect(client.frames.find((frame) => frame.type === "turn.started" && frame.run_id === turn.runId)?.interruptible).toBe(false);
    const from = client.frames.length;
    client.send({ type: "user.started_speaking" });
    client.send({ type: "user.stopped_speaking", transcript: "Skip it" });
    const before = client.sentText(turn.messageId).length;
    await client.next("output.delta", () => client.sentText(turn.messageId).length > before + 20, from);
    expect(client.frames.slice(from).map((frame) => frame.type)).not.toContain("output.paused");
    client.send({ type: "playback", message_id: turn.messageId, played_chars: 5 });
    client.send({ type: "emergency_stop" });
    const interrupted = await client.next("turn.interrupted", () => true, from);
    expect(interrupted).toMatchObject({ reason: "emergency_stop", heard_chars: 5 });
    await client.next("turn.ended", (frame) => frame.run_id === turn.runId, from);
    const answer = (await history(threadId)).messages.find((message) => message.message_id === turn.messageId);
    expect(answer).toMatchObject({ content: client.sentText(turn.messageId).slice(0, 5), interrupted: true });
    // The emergency stop dropped the queued "Skip it": no other turn starts.
    expect(client.frames.filter((frame) => frame.type === "turn.started")).toHaveLength(1);
  });

  it("an answer heard to its end is published whole; an ack past the end is clamped", async () => {
    await provider.setScenario({ chunks: 6, intervalMs: 1 });
    try {
      const { client, threadId } = await openSession();
      const from = client.frames.length;
      client.send({ type: "user.stopped_speaking", transcript: `Say hi [live ${++markers}]` });
      const started = await client.next("turn.started", () => true, from);
      const messageId = started.message_id as string;
      await client.next("output.done", (frame) => frame.message_id === messageId, from);
      // Not published before it was heard.
      expect(client.frames.some((frame) => frame.type === "message.published" && frame.message_id === messageId)).toBe(false);
      client.send({ type: "playback", message_id: messageId, played_chars: 1_000_000_000 });
      const published = await client.next("message.published", (frame) => frame.message_id === messageId, from);
      expect(published).toMatchObject({ content: client.sentText(messageId), interrupted: false });
      expect((await client.next("turn.ended", () => true, from)).status).toBe("completed");
      const answer = (await history(threadId)).messages.find((message) => message.message_id === messageId);
      expect(answer).toMatchObject({ content: client.sentText(messageId), interrupted: false });
    } finally {
      await provider.setScenario(SLOW);
    }
  });

  it("without playback acks, what was sent counts as heard", async () => {
    await provider.setScenario({ chunks: 6, intervalMs: 1 });
    try {
      const { client } = await openSession(undefined, {}, { playback_acks: false });
      const from = client.frames.length;
      client.send({ type: "user.stopped_speaking", transcript: `Say hi [live ${++markers}]` });
      const published = await client.next("message.published", () => true, from);
      expect(published.content).toBe(client.sentText(published.message_id as string));
      expect((await client.next("turn.ended", () => true, from)).status).toBe("completed");
    } finally {
      await provider.setScenario(SLOW);
    }
  });

  it("a socket closed mid-answer publishes what was heard and ends the run", async () => {
    const { client, threadId } = await openSession();
    const turn = await speakAndHear(client, "Describe the harbour", 30);
    client.send({ type: "playback", message_id: turn.messageId, played_chars: 12 });
    const sent = client.sentText(turn.messageId);
    // The ack is read before the close (frames of one socket arrive in order).
    await client.close();
    const run = await harness.tidemark.runtime.waitForTerminal("local", turn.runId, 10_000);
    expect(run?.status).toBe("cancelled");
    const answer = (await history(threadId)).messages.find((message) => message.message_id === turn.messageId);
    expect(answer).toMatchObject({ content: sent.slice(0, 12), interrupted: true });
  });

  it("an HTTP Stop of a live turn cuts it at what was heard, and the session goes on", async () => {
    const { client, threadId } = await openSession();
    const turn = await speakAndHear(client, "List the planets", 30);
    client.send({ type: "playback", message_id: turn.messageId, played_chars: 9 });
    // The ack has been applied once a later frame was answered.
    client.send({ type: "session.update" });
    await client.next("session.updated");
    const from = client.frames.length;
    const stop = await harness.api(`/v1/runs/${turn.runId}/cancel`, { method: "POST", json: {} });
    expect(stop.status).toBe(202);
    const interrupted = await client.next("turn.interrupted", () => true, from);
    expect(interrupted).toMatchObject({ reason: "stopped", heard_chars: 9 });
    const published = await client.next("message.published", () => true, from);
    expect(published).toMatchObject({ message_id: turn.messageId, content: client.sentText(turn.messageId).slice(0, 9), interrupted: true });
    const ended = await client.next("turn.ended", (frame) => frame.run_id === turn.runId, from);
    // In order: stop playing, what entered history, the run's end.
    expect(client.frames.indexOf(interrupted)).toBeLessThan(client.frames.indexOf(published));
    expect(client.frames.indexOf(published)).toBeLessThan(client.frames.indexOf(ended));
    const again = await speakAndHear(client, "Go on", 5);
    expect(again.runId).not.toBe(turn.runId);
    client.send({ type: "playback", message_id: again.messageId, played_chars: 3 });
    client.send({ type: "emergency_stop" });
    await client.next("turn.ended", (frame) => frame.run_id === again.runId);
    expect((await history(threadId)).messages.filter((message) => message.interrupted)).toHaveLength(2);
  });

  it("bad frames get error frames with stable codes; the socket stays open and the session works", async () => {
    const { client } = await openSession();
    const cases: [string | Buffer, string, boolean?][] = [
      ["not json", "invalid_frame"],
      ["[1,2]", "invalid_frame"],
      [JSON.stringify({ type: "dance" }), "invalid_frame"],
      [JSON.stringify({ type: "playback", message_id: "msg_x", played_chars: -1 }), "invalid_frame"],
      [JSON.stringify({ type: "playback", message_id: "msg_x", played_chars: 1.5 }), "invalid_frame"],
      [JSON.stringify({ type: "user.stopped_speaking", transcript: 42 }), "invalid_frame"],
      [JSON.stringify({ type: "session.update", interruption: { min_interruption_ms: "soon" } }), "invalid_frame"],
      [JSON.stringify({ type: "user.stopped_speaking", transcript: "nul \u0000 here" }), "invalid_request"],
      ["[".repeat(5_000) + "]".repeat(5_000), "invalid_request"],
      [JSON.stringify({ type: "user.stopped_speaking", transcript: "x".repeat(70_000) }), "frame_too_large"],
      [Buffer.from([1, 2, 3]), "invalid_frame", true],
      [JSON.stringify({ type: "playback", message_id: "msg_never_sent", played_chars: 3 }), "message_not_found"],
    ];
    for (const [data, code, binary] of cases) {
      const from = client.frames.length;
      client.sendRaw(data, { binary });
      const error = await client.next("error", () => true, from);
      expect(error.error, String(data).slice(0, 60)).toBe(code);
      expect(typeof error.message).toBe("string");
    }
    expect(client.isOpen).toBe(true);
    expect(client.frames.filter((frame) => frame.type === "turn.started")).toEqual([]);
    const turn = await speakAndHear(client, "Still there?", 5);
    client.send({ type: "emergency_stop" });
    await client.next("turn.ended", (frame) => frame.run_id === turn.runId);
  });

  it("two sessions on one thread follow the multitask rules: the second's turn is refused while the first's runs", async () => {
    const first = await openSession();
    const second = await openSession(first.threadId);
    const turn = await speakAndHear(first.client, "Tell me about whales", 10);
    const from = second.client.frames.length;
    second.client.send({ type: "user.stopped_speaking", transcript: "And dolphins?" });
    const refused = await second.client.next("error", () => true, from);
    expect(refused.error).toBe("run_in_progress");
    // The first session's turn went on, untouched.
    const before = first.client.sentText(turn.messageId).length;
    await first.client.next("output.delta", () => first.client.sentText(turn.messageId).length > before);
    expect(first.client.frames.map((frame) => frame.type)).not.toContain("turn.interrupted");
    first.client.send({ type: "emergency_stop" });
    await first.client.next("turn.ended", (frame) => frame.run_id === turn.runId);
  });

  it("TERMINATE of the thread cuts the live turn; a later turn is refused with thread_not_found", async () => {
    const { client, threadId } = await openSession();
    const turn = await speakAndHear(client, "Keep talking", 10);
    const from = client.frames.length;
    expect((await harness.api(`/v1/threads/${threadId}`, { method: "DELETE" })).status).toBeLessThan(300);
    const interrupted = await client.next("turn.interrupted", () => true, from);
    expect(interrupted.reason).toBe("stopped");
    await client.next("turn.ended", (frame) => frame.run_id === turn.runId, from);
    const after = client.frames.length;
    client.send({ type: "user.stopped_speaking", transcript: "Hello?" });
    expect((await client.next("error", () => true, after)).error).toBe("thread_not_found");
  });

  it("refuses an upgrade to a missing, malformed or deleted thread, or an unknown agent, with the API's JSON errors", async () => {
    const refusal = (thread: string, query = "") => connectLive(harness.url, thread, { query }).then(() => ({ status: 101, body: {} }), (error: { status: number; body: { error: string } }) => error);
    expect(await refusal("thr_01jd8x0f1ae2rbv7c9ks0d8m5q")).toMatchObject({ status: 404, body: { error: "thread_not_found" } });
    expect(await refusal("not-an-id")).toMatchObject({ status: 404, body: { error: "thread_not_found" } });
    const deleted = await harness.createThread();
    await harness.api(`/v1/threads/${deleted}`, { method: "DELETE" });
    expect(await refusal(deleted)).toMatchObject({ status: 404, body: { error: "thread_not_found" } });
    expect(await refusal(await harness.createThread(), "?agent=nobody")).toMatchObject({ status: 404, body: { error: "agent_not_found" } });
  });
});

describe("the live endpoint with API keys", () => {
  let keyed: Harness;
  beforeAll(async () => {
    keyed = await startHarness({ apiKeys: new Map([["key-a", "tenant_a"], ["key-b", "tenant_b"]]) });
  });
  afterAll(async () => keyed?.close());

  it("takes the key as a header or, from a browser, as a subprotocol; refuses none, a wrong one, or another tenant's thread", async () => {
    const thread = await keyed.createThread("key-a");
    const refusal = (options: Parameters<typeof connectLive>[2]) =>
      connectLive(keyed.url, thread, options).then(
        async (client) => {
          const ready = await client.next("session.ready", () => true, 0);
          await client.close();
          return { status: 101, body: ready as LiveFrame };
        },
        (error: { status: number; body: unknown }) => error,
      );
    expect(await refusal({})).toMatchObject({ status: 401, body: { error: "unauthorized" } });
    expect(await refusal({ headers: { authorization: "Bearer nope" } })).toMatchObject({ status: 401 });
    expect(await refusal({ headers: { authorization: "Bearer key-b" } })).toMatchObject({ status: 404, body: { error: "thread_not_found" } });
    expect(await refusal({ headers: { authorization: "Bearer key-a" } })).toMatchObject({ status: 101, body: { type: "session.ready", thread_id: thread } });
    const browserProtocols = ["tidemark.live", `tidemark.key.${Buffer.from("key-a").toString("base64url")}`];
    expect(await refusal({ protocols: browserProtocols })).toMatchObject({ status: 101, body: { type: "session.ready" } });
  });
});
