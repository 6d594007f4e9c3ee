/**
 * Fragments over a real server (DESIGN §9): after a Stop the client saves exactly what it had
 * received up to `last_seq`; the fragment is a labelled transition, reaches the next run's model
 * context as a fragment, and can be deleted as a new version. `tidemark check` stays clean.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { createDemoModel, type ChatModel, type ModelRequest } from "../src/runtime/index.js";
import { FRAGMENT_LABEL } from "../src/runtime/model-context.js";
import { LOCAL_TENANT } from "../src/server/index.js";
import { createFakeTime } from "./support/fake-timers.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";

/** The demo model, recording every request it is sent; a request that asks for a "long" answer gets one that is only ever stopped. */
function recordingModel(requests: ModelRequest[]): ChatModel {
  const demo = createDemoModel({ wordsPerSecond: 200, wordCount: 60 });
  const long = createDemoModel({ wordsPerSecond: 200, wordCount: 100_000 });
  return {
    ...demo,
    id: "recording-demo",
    stream: (request, options) => {
      requests.push(request);
      const isLong = request.messages.at(-1)?.content.includes("long") ?? false;
      return (isLong ? long : demo).stream(request, options);
    },
  };
}

const isDeltaFrom = (seq: number) => (event: RunEvent) => event.type === "message.delta" && event.seq >= seq;

/** Starts a run, reads its stream to the sixth event or so, stops it and waits until it is cancelled. */
async function stoppedRun(h: Harness, threadId: string) {
  const run = await h.startRun(threadId, "Tell me a long story about fragments");
  const seen = await h.events(run.run_id, { until: isDeltaFrom(6) });
  const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=10000`, { method: "POST", json: { reason: "user_pressed_stop" } });
  expect(cancel.body.status).toBe("cancelled");
  const deltas = seen.filter((event) => event.type === "message.delta");
  const messageId = deltas[0]!.type === "message.delta" ? deltas[0]!.message_id : "";
  return { runId: run.run_id as string, seen, deltas, messageId, cancel: cancel.body };
}

/** Runs to completion and returns its events. */
async function completedRun(h: Harness, threadId: string, content = "Write a short answer") {
  const run = await h.startRun(threadId, content);
  const events = await h.events(run.run_id);
  expect(events.at(-1)?.type).toBe("run.completed");
  return { runId: run.run_id as string, events };
}

const saveFragment = (h: Harness, runId: string, json: unknown) => h.api(`/v1/runs/${runId}/fragments`, { method: "POST", json });

describe("fragments over HTTP", () => {
  const requests: ModelRequest[] = [];
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ model: recordingModel(requests) });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("saves exactly the deltas up to last_seq, as a fragment_saved transition, and the next run sees it labelled", async () => {
    const threadId = await h.createThread();
    const stopped = await stoppedRun(h, threadId);
    // A seq the client saw, short of the last one: the fragment ends exactly there.
    const lastSeq = stopped.deltas.at(-2)!.seq;
    const expected = deltaText(stopped.seen.filter((event) => event.seq <= lastSeq));
    expect(expected.length).toBeGreaterThan(0);

    const saved = await saveFragment(h, stopped.runId, { message_id: stopped.messageId, last_seq: lastSeq });

    expect(saved.status).toBe(201);
    expect(saved.body).toMatchObject({
      message_id: stopped.messageId,
      role: "assistant",
      content: expected,
      run_id: stopped.runId,
      publication_status: "fragment",
      state_version: stopped.cancel.accepted_state_version + 1,
    });
    const thread = await h.api(`/v1/threads/${threadId}`);
    expect(thread.body.state_version).toBe(saved.body.state_version);
    const checkpoints = await h.api(`/v1/threads/${threadId}/checkpoints`);
    expect(checkpoints.body.checkpoints.at(-1)).toMatchObject({
      kind: "fragment_saved",
      checkpoint_id: saved.body.checkpoint_id,
      message_id: stopped.messageId,
      state_version: saved.body.state_version,
    });
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages.at(-1)).toEqual(saved.body);

    // One fragment per message: a repeat is refused and shows what was saved.
    const again = await saveFragment(h, stopped.runId, { message_id: stopped.messageId, last_seq: stopped.deltas.at(-1)!.seq });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: "fragment_already_saved", publication_status: "fragment", fragment: { content: expected } });

    const before = requests.length;
    await completedRun(h, threadId, "Go on from there");
    const context = requests.slice(before).at(0)!.messages;
    expect(context).toContainEqual({ role: "assistant", content: FRAGMENT_LABEL + expected });
    expect(context.at(-1)).toEqual({ role: "user", content: "Go on from there" });
  });

  it("deletes a fragment as a new version; it is gone from history and a second delete is 404", async () => {
    const threadId = await h.createThread();
    const stopped = await stoppedRun(h, threadId);
    const saved = await saveFragment(h, stopped.runId, { message_id: stopped.messageId, last_seq: stopped.deltas.at(-1)!.seq });
    expect(saved.status).toBe(201);

    const deleted = await h.api(`/v1/threads/${threadId}/messages/${stopped.messageId}`, { method: "DELETE" });

    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ message_id: stopped.messageId, publication_status: "deleted", state_version: saved.body.state_version + 1 });
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.state_version).toBe(deleted.body.state_version);
    expect(history.body.messages.map((message: { message_id: string }) => message.message_id)).not.toContain(stopped.messageId);
    const checkpoints = await h.api(`/v1/threads/${threadId}/checkpoints`);
    expect(checkpoints.body.checkpoints.at(-1)).toMatchObject({ kind: "message_deleted", message_id: stopped.messageId });

    const second = await h.api(`/v1/threads/${threadId}/messages/${stopped.messageId}`, { method: "DELETE" });
    expect(second.status).toBe(404);
    expect(second.body.error).toBe("message_not_found");
    const resave = await saveFragment(h, stopped.runId, { message_id: stopped.messageId, last_seq: stopped.deltas.at(-1)!.seq });
    expect(resave.body).toMatchObject({ error: "fragment_already_saved", publication_status: "deleted" });

    const before = requests.length;
    await completedRun(h, threadId, "Start over");
    expect(JSON.stringify(requests.slice(before).at(0)!.messages)).not.toContain(FRAGMENT_LABEL);
  });

  it("refuses last_seq outside the stream or before the message's first delta (422), with the stream's bounds", async () => {
    const threadId = await h.createThread();
    const stopped = await stoppedRun(h, threadId);
    const all = await h.events(stopped.runId, { after: 0 });
    const lastStreamedSeq = all.at(-1)!.seq;
    const firstDeltaSeq = stopped.deltas[0]!.seq;

    for (const body of [
      { message_id: stopped.messageId, last_seq: lastStreamedSeq + 1 },
      { message_id: stopped.messageId, last_seq: 0 },
      { message_id: stopped.messageId, last_seq: firstDeltaSeq - 1 },
      { message_id: "msg_01jd8x0f1ae2rbv7c9ks0d8m5q", last_seq: lastStreamedSeq },
    ]) {
      const refused = await saveFragment(h, stopped.runId, body);
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(refused.body).toMatchObject({ error: "fragment_out_of_range", last_streamed_seq: lastStreamedSeq, first_streamed_seq: 1 });
    }
    // The last event is the terminal one: saving up to it keeps every delta the client received.
    const whole = await saveFragment(h, stopped.runId, { message_id: stopped.messageId, last_seq: lastStreamedSeq });
    expect(whole.status).toBe(201);
    expect(whole.body.content).toBe(deltaText(all));
  });

  it("refuses a running run (409 run_not_terminal), a published message (409) and an unknown run (404); a published message cannot be deleted", async () => {
    const threadId = await h.createThread();
    const longRun = await h.startRun(threadId, "Tell me a long story");
    const seen = await h.events(longRun.run_id, { until: isDeltaFrom(4) });
    const streaming = seen.at(-1)!;
    if (streaming.type !== "message.delta") throw new Error("expected a delta");
    const running = await saveFragment(h, longRun.run_id, { message_id: streaming.message_id, last_seq: streaming.seq });
    expect(running.status).toBe(409);
    expect(running.body).toMatchObject({ error: "run_not_terminal", status: "running" });
    await h.api(`/v1/runs/${longRun.run_id}/cancel?wait=10000`, { method: "POST" });

    const run = await completedRun(h, threadId);
    const delta = run.events.findLast((event) => event.type === "message.delta")!;
    if (delta.type !== "message.delta") throw new Error("expected a delta");
    const published = await h.api(`/v1/runs/${run.runId}`);
    expect(published.body.published_message_id).toBe(delta.message_id);
    const refused = await saveFragment(h, run.runId, { message_id: delta.message_id, last_seq: delta.seq });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: "message_already_published", message_id: delta.message_id });

    const unknown = await saveFragment(h, "run_01jd8x0f1ae2rbv7c9ks0d8m5q", { message_id: delta.message_id, last_seq: 1 });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe("run_not_found");

    const invalid = await saveFragment(h, run.runId, { message_id: delta.message_id, last_seq: -1 });
    expect(invalid.status).toBe(400);

    const notDeletable = await h.api(`/v1/threads/${threadId}/messages/${published.body.published_message_id}`, { method: "DELETE" });
    expect(notDeletable.status).toBe(409);
    expect(notDeletable.body).toMatchObject({ error: "message_not_deletable", publication_status: "published" });
    const unknownThread = await h.api(`/v1/threads/thr_01jd8x0f1ae2rbv7c9ks0d8m5q/messages/${delta.message_id}`, { method: "DELETE" });
    expect(unknownThread.body.error).toBe("thread_not_found");
  });

  it("refuses a fragment once another run has followed on the thread (409 thread_moved_on)", async () => {
    const threadId = await h.createThread();
    const stopped = await stoppedRun(h, threadId);
    await completedRun(h, threadId, "Something else");

    const refused = await saveFragment(h, stopped.runId, { message_id: stopped.messageId, last_seq: stopped.deltas.at(-1)!.seq });

    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe("thread_moved_on");
  });
});

describe("a fragment after the stream buffer expired", () => {
  const TTL_MS = 60_000;
  // The buffer's TTL runs on fake time: it ends when the test advances it, not a moment later.
  const time = createFakeTime();
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 200, wordCount: 100_000 }, eventTtlMs: TTL_MS, timers: time.timers });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("answers 410 stream_expired with the history address", async () => {
    const threadId = await h.createThread();
    const stopped = await stoppedRun(h, threadId);
    // The run's terminal event set the buffer's TTL timer.
    await time.whenScheduled((timer) => !timer.isInterval && timer.ms === TTL_MS);
    expect(h.tidemark.runtime.hub.get(LOCAL_TENANT, stopped.runId)).toBeDefined();
    await time.advance(TTL_MS);
    expect(h.tidemark.runtime.hub.get(LOCAL_TENANT, stopped.runId)).toBeUndefined();

    const expired = await saveFragment(h, stopped.runId, { message_id: stopped.messageId, last_seq: stopped.deltas.at(-1)!.seq });

    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ error: "stream_expired", history_url: `/v1/threads/${threadId}/history`, run_status: "cancelled" });
  });
});
