/**
 * Rollback on the native API, end to end on both stores (docs/decisions/012):
 * `POST /v1/runs/{id}/rollback` stops the run and takes its input back as a new version;
 * `multitask: "rollback"` does it to the active run before the new one starts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createDemoModel } from "../src/runtime/index.js";
import { createGatedModel, gatedWhenAskedTo } from "./support/client-session.js";
import { startHarness, type Harness, type HarnessStore } from "./support/harness.js";

describe.each<HarnessStore>(["sqlite", "postgres"])("rollback on the native API (%s)", (storeKind) => {
  let h: Harness;
  // An answer to a message starting with "gate" streams a few words, then waits (until a Stop).
  const gated = createGatedModel();
  const demo = createDemoModel({ wordsPerSecond: 300, wordCount: 10 });
  const model = gatedWhenAskedTo(gated, demo);

  beforeAll(async () => {
    h = await startHarness({ model, storeKind });
  });
  afterEach(async () => {
    await h.expectNoViolations();
  });
  afterAll(async () => {
    gated.release();
    await h.close();
  });

  const contents = async (threadId: string) => ((await h.api(`/v1/threads/${threadId}/history`)).body.messages as any[]).map((message) => message.content);

  it("POST /v1/runs/{id}/rollback stops the run and takes its input back, once; a completed run is 409", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "gate: take this back");
    await h.events(run.run_id, { until: (event) => event.type === "message.delta" });

    const first = await h.api(`/v1/runs/${run.run_id}/rollback`, { method: "POST" });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ run_id: run.run_id, status: "cancelled", already_rolled_back: false });
    const thread = (await h.api(`/v1/threads/${threadId}`)).body;
    expect(thread.state_version).toBe(first.body.state_version);
    expect(await contents(threadId)).toEqual([]);
    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints as any[];
    expect(checkpoints.at(-1)).toMatchObject({ kind: "run_rolled_back", run_id: run.run_id, message_id: first.body.rolled_back_message_id });

    const again = await h.api(`/v1/runs/${run.run_id}/rollback`, { method: "POST" });
    expect(again.body).toEqual({ ...first.body, already_rolled_back: true });

    const done = await h.startRun(threadId, "Answer me");
    await h.events(done.run_id);
    const refused = await h.api(`/v1/runs/${done.run_id}/rollback`, { method: "POST" });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ error: "run_not_rollbackable", reason: "completed" });
    expect(await contents(threadId)).toHaveLength(2);
  });

  it('multitask "rollback" takes the active run\'s input back before the new run starts', async () => {
    const threadId = await h.createThread();
    const first = await h.startRun(threadId, "gate: first");
    await h.events(first.run_id, { until: (event) => event.type === "message.delta" });
    const second = await h.startRun(threadId, "Second", { multitask: "rollback" });
    await h.events(second.run_id);
    expect((await h.api(`/v1/runs/${first.run_id}`)).body.status).toBe("cancelled");
    expect((await contents(threadId))[0]).toBe("Second");
  });
});
