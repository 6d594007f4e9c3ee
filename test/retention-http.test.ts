/**
 * Retention over HTTP with the default settings, on both stores (docs/data/lifetimes.md): a month
 * and a day after a run, the server's pruner expired its detail and traces; the run's status and
 * stats still answer, its steps answer 410 `run_detail_expired` (gone, never a 5xx), its messages
 * stay in the history, and `tidemark check` stays clean.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness, type HarnessStore } from "./support/harness.js";

const DAY_MS = 86_400_000;

describe.each<HarnessStore>(["sqlite", "postgres"])("retention with the default settings (%s)", (storeKind) => {
  let h: Harness;
  let offsetMs = 0;
  beforeAll(async () => {
    h = await startHarness({ storeKind, clock: { now: () => Date.now() + offsetMs }, pruneIntervalMs: 3_600_000 });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("expires a finished run's detail and traces after 30 days; its status, stats and messages stay", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "hello there");
    expect((await h.events(run.run_id)).at(-1)!.type).toBe("run.completed");
    const before = (await h.api(`/v1/runs/${run.run_id}`)).body;
    expect((await h.api(`/v1/runs/${run.run_id}/steps`)).status).toBe(200);
    expect(await h.tidemark.store.listTraces("local", run.run_id)).not.toEqual([]);

    offsetMs = 29 * DAY_MS;
    expect(await h.tidemark.runtime.pruneExpired()).toMatchObject({ run_detail: 0, traces: 0 });
    expect((await h.api(`/v1/runs/${run.run_id}/steps`)).status).toBe(200);

    offsetMs = 31 * DAY_MS;
    const pruned = await h.tidemark.runtime.pruneExpired();
    expect(pruned).toMatchObject({ run_detail: 1, fragments: 0 });
    expect(pruned!.traces).toBeGreaterThan(0);
    expect(await h.tidemark.store.listTraces("local", run.run_id)).toEqual([]);

    const steps = await h.api(`/v1/runs/${run.run_id}/steps`);
    expect(steps.status).toBe(410);
    expect(steps.body).toMatchObject({ error: "run_detail_expired", history_url: `/v1/threads/${threadId}/history`, run_status: "completed" });
    const after = await h.api(`/v1/runs/${run.run_id}`);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ status: "completed", state_version: before.state_version, published_message_id: before.published_message_id });
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(history.messages.map((message: { role: string }) => message.role)).toEqual(["user", "assistant"]);
    expect((await h.api(`/v1/threads/${threadId}`)).body.stats).toMatchObject({ message_count: 2 });
  });
});
