import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createId } from "../src/core/index.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";

describe("a run over HTTP and SSE", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 400, wordCount: 400 } });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("start → deltas → Stop: history has no partial text, stats are counted, run.cancelled names the resume checkpoint", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Tell me about honest cancellation");
    const seen = await h.events(run.run_id, { until: (event) => event.type === "message.delta" && event.seq >= 6 });
    const partial = deltaText(seen);
    expect(partial.length).toBeGreaterThan(0);

    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel`, { method: "POST", json: { reason: "user_pressed_stop" } });
    expect(cancel.status).toBe(202);
    expect(cancel.body).toMatchObject({ run_id: run.run_id, status: "cancel_requested", already_terminal: false });
    expect(cancel.body.accepted_state_version).toBe(run.state_version + 1);

    const all = await h.events(run.run_id, { after: 0 });
    const types = all.map((event) => event.type);
    expect(types[0]).toBe("run.started");
    expect(types.at(-1)).toBe("run.cancelled");
    expect(all.map((event) => event.seq)).toEqual(all.map((_, index) => index + 1));
    const cancelRequestedAt = types.indexOf("run.cancel_requested");
    expect(types.slice(cancelRequestedAt).includes("message.delta")).toBe(false);
    expect(types).not.toContain("message.published");
    const cancelled = all.at(-1)!;
    if (cancelled.type !== "run.cancelled") throw new Error("unreachable");
    expect(cancelled.resume_checkpoint_id).toBe(cancel.body.resume_checkpoint_id);
    expect(cancelled.discarded_stream_chars).toBe(deltaText(all).length);
    expect(cancelled.reason).toBe("user_pressed_stop");

    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages.map((message: any) => message.role)).toEqual(["user"]);
    expect(JSON.stringify(history.body)).not.toContain(partial.trim().split(" ").slice(-3).join(" "));

    const thread = await h.api(`/v1/threads/${threadId}`);
    expect(thread.body).toMatchObject({ status: "idle", state_version: cancel.body.accepted_state_version, active_run_id: null });
    expect(thread.body.stats).toMatchObject({ message_count: 1, llm_call_count: 1, discarded_generation_count: 1 });
    expect(thread.body.stats.discarded_stream_chars).toBe(cancelled.discarded_stream_chars);
    expect(thread.body.stats.output_tokens).toBeGreaterThan(0);

    const status = await h.api(`/v1/runs/${run.run_id}`);
    expect(status.body).toMatchObject({ status: "cancelled", cancel_reason: "user_pressed_stop", published_message_id: null });
    expect(status.body.cancel_requested_at).toEqual(expect.any(String));

    const checkpoints = await h.api(`/v1/threads/${threadId}/checkpoints`);
    const last = checkpoints.body.checkpoints.at(-1);
    expect(last).toMatchObject({ kind: "cancel_accepted", checkpoint_id: cancelled.resume_checkpoint_id, resume_policy: "regenerate_pending_step" });
    expect(last.cancelled_generation.discarded_stream_chars).toBe(cancelled.discarded_stream_chars);
    expect(last.pending_step).toMatchObject({ kind: "model" });
  });

  it("a completed run publishes its answer with a checkpoint, and the thread stays usable", async () => {
    const threadId = await h.createThread();
    const short = await startHarnessShortRun(h, threadId);
    const events = short.events;
    const published = events.find((event) => event.type === "message.published");
    expect(published).toBeDefined();
    expect(events.at(-1)!.type).toBe("run.completed");
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages.map((message: any) => message.role)).toEqual(["user", "assistant"]);
    const answer = history.body.messages[1];
    expect(answer.content).toBe(deltaText(events));
    expect(answer.content).toContain("demo model");
    expect(answer.publication_status).toBe("published");
    const thread = await h.api(`/v1/threads/${threadId}`);
    expect(thread.body.title).toBe("Write a short answer");
    expect(thread.body.stats).toMatchObject({ message_count: 2, llm_call_count: 1 });
    // stats.updated carries the counts in the same snake_case shape as the thread and run views.
    const updated = events.filter((event) => event.type === "stats.updated").at(-1);
    if (updated?.type !== "stats.updated") throw new Error("no stats.updated event");
    expect(updated.thread_stats).toEqual(thread.body.stats);
    expect(updated.run_stats).toEqual((await h.api(`/v1/runs/${short.runId}`)).body.stats);
    const cancel = await h.api(`/v1/runs/${short.runId}/cancel`, { method: "POST" });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ status: "completed", already_terminal: true, published_message_id: answer.message_id });
    expect(cancel.body.accepted_state_version).toBe(thread.body.state_version);
  });

  it("cancel ?wait= returns only when the run is terminal", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    await h.events(run.run_id, { until: (event) => event.type === "message.delta" });
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST" });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ status: "cancelled", wait_timed_out: false });
    expect((await h.api(`/v1/runs/${run.run_id}`)).body.status).toBe("cancelled");
  });

  it("a second run on a busy thread is refused; a stale version is a conflict first", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    const busy = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "again" } } });
    expect(busy.status).toBe(409);
    expect(busy.body).toMatchObject({ error: "run_in_progress", active_run_id: run.run_id });
    const stale = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { input: { role: "user", content: "again" }, expected_state_version: 1 },
    });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ error: "state_version_conflict", current_state_version: run.state_version });
    // The branch to offer starts where this client built (version 1), not at the other run's head.
    const root = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints.find((checkpoint: any) => checkpoint.state_version === 1);
    expect(stale.body.allowed_actions).toEqual(["reload", `fork_from_${root.checkpoint_id}`]);
    await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST" });
  });

  it("a client-named run is idempotent, and a key reused for another request is refused", async () => {
    const threadId = await h.createThread();
    const runId = createId("run");
    const first = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "once" }, run_id: runId } });
    expect(first.status).toBe(201);
    expect(first.headers.get("location")).toBe(`/v1/runs/${runId}/events`);
    const repeat = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "once" }, run_id: runId } });
    expect(repeat.status).toBe(200);
    expect(repeat.body.run_id).toBe(runId);
    const reused = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "other" }, run_id: runId } });
    expect(reused.status).toBe(409);
    expect(reused.body.error).toBe("idempotency_key_reused");
    await h.api(`/v1/runs/${runId}/cancel?wait=5000`, { method: "POST" });

    const keyed = () =>
      h.api(`/v1/threads/${threadId}/runs`, {
        method: "POST",
        headers: { "idempotency-key": "send-once-42" },
        json: { input: { role: "user", content: "keyed" } },
      });
    const a = await keyed();
    const b = await keyed();
    expect(a.status).toBe(201);
    expect(b.status).toBe(200);
    expect(b.body.run_id).toBe(a.body.run_id);
    await h.api(`/v1/runs/${a.body.run_id}/cancel?wait=5000`, { method: "POST" });
  });

  it("a Stop pressed before the create landed is remembered and applied", async () => {
    const threadId = await h.createThread();
    const runId = createId("run");
    const early = await h.api(`/v1/runs/${runId}/cancel`, { method: "POST", json: { reason: "early_stop" } });
    expect(early.status).toBe(202);
    expect(early.body).toMatchObject({ run_id: runId, pending_creation: true });
    const created = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "hi" }, run_id: runId } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ run_id: runId, status: "cancelled", cancel_reason: "early_stop" });
    const events = await h.events(runId, { after: 0 });
    expect(events.map((event) => event.type)).toEqual(["run.started", "run.cancel_requested", "checkpoint.saved", "run.cancelled"]);
    const history = await h.api(`/v1/threads/${threadId}/history`);
    expect(history.body.messages).toHaveLength(1);
  });

  it("DELETE terminates: cancels the thread's run and the thread is gone", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId);
    await h.events(run.run_id, { until: (event) => event.type === "message.delta" });
    const deleted = await h.api(`/v1/threads/${threadId}`, { method: "DELETE" });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ thread_id: threadId, status: "deleted", cancelled_run_ids: [run.run_id] });
    expect((await h.api(`/v1/threads/${threadId}`)).status).toBe(404);
    const events = await h.events(run.run_id, { after: 0 });
    expect(events.at(-1)).toMatchObject({ type: "run.cancelled", reason: "thread_terminated" });
    expect((await h.api(`/v1/threads/${threadId}`, { method: "DELETE" })).status).toBe(404);
  });

  it("serves OpenAPI 3.1, health and Prometheus metrics", async () => {
    const spec = await h.api("/v1/openapi.json");
    expect(spec.status).toBe(200);
    expect(spec.body.openapi).toBe("3.1.0");
    expect(Object.keys(spec.body.paths)).toEqual(
      expect.arrayContaining(["/v1/threads", "/v1/threads/{thread_id}/runs", "/v1/runs/{run_id}/cancel", "/v1/runs/{run_id}/events"]),
    );
    expect((await h.api("/healthz")).body).toMatchObject({ status: "ok", model: "demo" });
    const metrics = await h.api("/metrics");
    expect(metrics.body).toContain("tidemark_active_runs");
    expect(metrics.body).toContain("tidemark_cancel_latency_seconds_bucket");
    expect(metrics.body).toMatch(/tidemark_events_sent_total \d+/);
  });
});

async function startHarnessShortRun(h: Harness, threadId: string) {
  const run = await h.startRun(threadId, "Write a short answer");
  const events = await h.events(run.run_id);
  return { runId: run.run_id as string, events };
}
