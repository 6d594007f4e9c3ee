/** Continuing after a Stop: versioned resume, race 3 of §16, multitask interrupt, history markers. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STOPPED_RESPONSE_NOTE } from "../src/runtime/execute-run.js";
import { createDemoModel, type ChatModel, type ModelRequest } from "../src/runtime/index.js";
import { createDemoOutbox, createDemoTools, type DemoOutbox } from "../src/tools/index.js";
import { deltaText, startHarness, type Harness } from "./support/harness.js";

/** The demo model, recording every request it is sent. */
function recordingModel(): { model: ChatModel; requests: ModelRequest[] } {
  const demo = createDemoModel({ wordsPerSecond: 400, wordCount: 300 });
  const requests: ModelRequest[] = [];
  return {
    requests,
    model: {
      id: "demo",
      title: demo.title,
      stream(request, options) {
        requests.push(request);
        return demo.stream(request, options);
      },
    },
  };
}

describe("continuing after a Stop", () => {
  const recorder = recordingModel();
  let h: Harness;
  let outbox: DemoOutbox;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-resume-"));
    outbox = createDemoOutbox(join(dir, "outbox.db"));
    h = await startHarness({ model: recorder.model, tools: createDemoTools({ outbox, searchDelayMs: 5 }) });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    outbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function stopMidStream(content = "Tell me a long story") {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, content);
    const seen = await h.events(run.run_id, { until: (event) => event.type === "message.delta" && event.seq >= 5 });
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST" });
    expect(cancel.body.status).toBe("cancelled");
    return { threadId, run, seen, cancel: cancel.body };
  }

  it("resumes from the saved point: the model is told its answer was stopped, and the discarded text is never glued on", async () => {
    const { threadId, seen, cancel } = await stopMidStream();
    const before = recorder.requests.length;
    const resumed = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: {
        input: { role: "user", content: "Please go on" },
        resume_from_checkpoint_id: cancel.resume_checkpoint_id,
        expected_state_version: cancel.accepted_state_version,
      },
    });
    expect(resumed.status).toBe(201);
    expect(resumed.body.base_checkpoint_id).toBe(cancel.resume_checkpoint_id);
    const events = await h.events(resumed.body.run_id);
    expect(events.at(-1)!.type).toBe("run.completed");
    const request = recorder.requests[before]!;
    expect(request.messages.map((message) => message.role)).toEqual(["user", "system", "user"]);
    expect(request.messages[1]).toEqual({ role: "system", content: STOPPED_RESPONSE_NOTE });
    expect(JSON.stringify(request.messages)).not.toContain(deltaText(seen).trim());
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(history.messages.map((message: any) => message.role)).toEqual(["user", "user", "assistant"]);
    expect(history.markers).toEqual([
      expect.objectContaining({ type: "interrupted_response", label: "previous response was interrupted", checkpoint_id: cancel.resume_checkpoint_id }),
    ]);
  });

  it("continues from the saved point without a new message: the stopped step runs again", async () => {
    const { threadId, cancel } = await stopMidStream("Tell me a long story about tides");
    const before = recorder.requests.length;
    const resumed = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { resume_from_checkpoint_id: cancel.resume_checkpoint_id, expected_state_version: cancel.accepted_state_version },
    });
    expect(resumed.status).toBe(201);
    expect(resumed.body).toMatchObject({ input_message_id: null, base_checkpoint_id: cancel.resume_checkpoint_id });
    expect((await h.events(resumed.body.run_id)).at(-1)!.type).toBe("run.completed");
    // The model answers the same message again, told that its first answer was stopped.
    const request = recorder.requests[before]!;
    expect(request.messages).toEqual([
      { role: "system", content: STOPPED_RESPONSE_NOTE },
      { role: "user", content: "Tell me a long story about tides" },
    ]);
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(history.messages.map((message: any) => message.role)).toEqual(["user", "assistant"]);
    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints;
    expect(checkpoints.map((checkpoint: any) => checkpoint.kind)).toEqual([
      "thread_created",
      "input_accepted",
      "cancel_accepted",
      "resume_accepted",
      "message_published",
    ]);
    expect(checkpoints[3].pending_step).toMatchObject({ kind: "model" });
    // Without resume_from_checkpoint_id, input stays required.
    const missing = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe("invalid_request");
  });

  it("race 3 with Continue: two tabs continue one checkpoint; one proceeds, the other is told to reload or branch", async () => {
    const { threadId, cancel } = await stopMidStream();
    const resume = () =>
      h.api(`/v1/threads/${threadId}/runs`, {
        method: "POST",
        json: { resume_from_checkpoint_id: cancel.resume_checkpoint_id, expected_state_version: cancel.accepted_state_version },
      });
    const [a, b] = await Promise.all([resume(), resume()]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    const loser = a.status === 409 ? a : b;
    expect(loser.body.allowed_actions).toEqual(["reload", `fork_from_${cancel.resume_checkpoint_id}`]);
    await h.events((a.status === 201 ? a : b).body.run_id);
  });

  it("race 3: two tabs resume one checkpoint at once; exactly one proceeds, the other gets the conflict", async () => {
    const { threadId, cancel } = await stopMidStream();
    const resume = (content: string) =>
      h.api(`/v1/threads/${threadId}/runs`, {
        method: "POST",
        json: {
          input: { role: "user", content },
          resume_from_checkpoint_id: cancel.resume_checkpoint_id,
          expected_state_version: cancel.accepted_state_version,
        },
      });
    const [a, b] = await Promise.all([resume("tab A"), resume("tab B")]);
    const statuses = [a.status, b.status].sort();
    expect(statuses).toEqual([201, 409]);
    const loser = a.status === 409 ? a : b;
    expect(loser.body).toMatchObject({ error: "state_version_conflict", current_state_version: cancel.accepted_state_version + 1 });
    expect(loser.body.allowed_actions).toEqual(expect.arrayContaining(["reload"]));
    const winner = a.status === 201 ? a : b;
    await h.events(winner.body.run_id);
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    // The two stories never mix: only the winner's input is in history.
    const inputs = history.filter((message: any) => message.role === "user").map((message: any) => message.content);
    expect(inputs.filter((content: string) => content.startsWith("tab "))).toHaveLength(1);
  });

  it("race 3 without expected_state_version: the resumed checkpoint's own version decides", async () => {
    const { threadId, cancel } = await stopMidStream();
    const resume = (content: string) =>
      h.api(`/v1/threads/${threadId}/runs`, {
        method: "POST",
        json: { input: { role: "user", content }, resume_from_checkpoint_id: cancel.resume_checkpoint_id },
      });
    const [a, b] = await Promise.all([resume("tab A"), resume("tab B")]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    const winner = a.status === 201 ? a : b;
    await h.events(winner.body.run_id);
  });

  it("an older checkpoint of the thread is stale (fork from it instead); another thread's checkpoint is not found", async () => {
    const { threadId, cancel } = await stopMidStream();
    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints;
    const older = checkpoints[0].checkpoint_id;
    const stale = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { input: { role: "user", content: "x" }, resume_from_checkpoint_id: older },
    });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ error: "state_version_conflict", current_checkpoint_id: cancel.resume_checkpoint_id });
    expect(stale.body.allowed_actions).toEqual(["reload", `fork_from_${older}`]);
    const other = await stopMidStream();
    const foreign = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { input: { role: "user", content: "x" }, resume_from_checkpoint_id: other.cancel.resume_checkpoint_id },
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe("checkpoint_not_found");
  });

  it("resumes after a Stop mid-tool: the unanswered call has an explicit result, nothing was sent", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Please email erin@example.com the report");
    await h.events(run.run_id, { until: (event) => event.type === "run.interrupted" });
    const cancel = (await h.api(`/v1/runs/${run.run_id}/cancel?wait=5000`, { method: "POST" })).body;
    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints;
    // A Stop in a tool step records that results already in are reused, never redone.
    expect(checkpoints.at(-1)).toMatchObject({ kind: "cancel_accepted", resume_policy: "reuse_tool_result", pending_step: { kind: "tool" } });
    const before = recorder.requests.length;
    const resumed = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: {
        input: { role: "user", content: "never mind that, just summarise" },
        resume_from_checkpoint_id: cancel.resume_checkpoint_id,
        expected_state_version: cancel.accepted_state_version,
      },
    });
    expect(resumed.status).toBe(201);
    await h.events(resumed.body.run_id);
    const request = recorder.requests[before]!;
    expect(request.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool", "system", "user"]);
    expect(request.messages[2]).toMatchObject({ role: "tool", content: expect.stringMatching(/^\[cancelled before execution\]/) });
    expect(outbox.list()).toHaveLength(0);
  });

  it("multitask interrupt: the active run is cancelled and has really stopped before the new one starts", async () => {
    const threadId = await h.createThread();
    const first = await h.startRun(threadId, "a long answer please");
    await h.events(first.run_id, { until: (event) => event.type === "message.delta" });
    const second = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { input: { role: "user", content: "actually, something else" }, multitask: "interrupt" },
    });
    expect(second.status).toBe(201);
    expect((await h.api(`/v1/runs/${first.run_id}`)).body).toMatchObject({ status: "cancelled", cancel_reason: "interrupted_by_new_run" });
    expect((await h.events(second.body.run_id)).at(-1)!.type).toBe("run.completed");
    const roles = (await h.api(`/v1/threads/${threadId}/history`)).body.messages.map((message: any) => message.role);
    expect(roles).toEqual(["user", "user", "assistant"]);
    // Without interrupt, a busy thread still refuses.
    const third = await h.startRun(threadId, "one more");
    const refused = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "and again" } } });
    expect(refused.body.error).toBe("run_in_progress");
    await h.api(`/v1/runs/${third.run_id}/cancel?wait=5000`, { method: "POST" });
  });
});
