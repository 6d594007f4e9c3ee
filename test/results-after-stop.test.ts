/**
 * Results that arrive after a Stop (issue 19 item 4), over a real server on both stores: a search
 * step shows three records (`results.added`), the user stops, and a fourth record arrives after
 * the Stop. The fourth is never shown, never in history, the stream or the checkpoint; the
 * cancel's checkpoint says which set was confirmed (three ids, and that one arrived after); a
 * Continue repeats the search and says how its set differs from the confirmed one
 * (`results.updated`), so nothing joins the next turn's material silently.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineAgent } from "../src/agents/index.js";
import type { RunEvent } from "../src/core/index.js";
import { startHarness, type Harness } from "./support/harness.js";

type SearchRecord = { id: string; title: string };
const RECORDS: SearchRecord[] = [1, 2, 3, 4].map((n) => ({ id: `rec-${n}`, title: `Supplier number ${n} (marker-${n})` }));

/** A gate the test opens; the source below waits on it before its fourth record. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}
let fourth = gate();
/** Whether the source holds its fourth record back (the first run) or gives all four at once (the Continue). */
let isHoldingFourth = true;

/** A search that does not honour its signal: its fourth record can arrive after a Stop. */
async function* search(): AsyncGenerator<SearchRecord> {
  for (const [index, record] of RECORDS.entries()) {
    if (index === 3 && isHoldingFourth) await fourth.opened;
    yield record;
  }
}

const searchAgent = defineAgent({
  name: "search",
  steps: () => [
    {
      id: "search",
      run: async (step) => {
        const found = await step.collect(() => search(), { id: (record) => record.id });
        return { records: found.items, update: found.update };
      },
    },
  ],
});

/** A search whose source goes silent after two records and ignores its signal: never ends by itself. */
const silentAgent = defineAgent({
  name: "silent-search",
  steps: () => [
    {
      id: "search",
      run: async (step) => {
        const found = await step.collect(
          async function* () {
            yield RECORDS[0]!;
            yield RECORDS[1]!;
            await new Promise<never>(() => {});
          },
          { id: (record) => record.id },
        );
        return found.items;
      },
    },
  ],
});

/** The run's bound on work that ignores a Stop (the harness's `shieldTimeoutMs`). */
const SHIELD_MS = 1_000;

const resultEvents = (events: RunEvent[]) => events.filter((event) => event.type === "results.added" || event.type === "results.updated");

describe.each(["sqlite", "postgres"] as const)("results after a Stop (%s)", (storeKind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ agents: [searchAgent, silentAgent], storeKind, shieldTimeoutMs: SHIELD_MS });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("a fourth record after the Stop is dropped; the checkpoint confirms three; a Continue repeats the search and says it added one", async () => {
    fourth = gate();
    isHoldingFourth = true;
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Find suppliers", { agent: "search" });
    let added = 0;
    await h.events(run.run_id, { until: (event) => event.type === "results.added" && ++added === 3 });

    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel`, { method: "POST", json: { reason: "user_pressed_stop" } });
    expect(cancel.status).toBe(202);
    // The fourth record arrives after the Stop was accepted.
    fourth.open();
    const events = await h.events(run.run_id, { after: 0 });
    expect(events.at(-1)?.type).toBe("run.cancelled");
    expect(resultEvents(events).map((event) => (event.type === "results.added" ? event.result_id : event.type))).toEqual(["rec-1", "rec-2", "rec-3"]);
    expect(JSON.stringify(events)).not.toContain("marker-4");

    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints;
    const stop = checkpoints.find((checkpoint: any) => checkpoint.checkpoint_id === cancel.body.resume_checkpoint_id);
    expect(stop).toMatchObject({ kind: "cancel_accepted" });
    expect(stop.cancelled_generation.confirmed_results).toEqual([
      { step_id: "search", result_ids: ["rec-1", "rec-2", "rec-3"], is_complete: false, arrived_after_stop: 1 },
    ]);
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(JSON.stringify(history)).not.toContain("marker-");
    const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
    expect(steps[0]).toMatchObject({ step_id: "search", status: "cancelled", result: null });

    // Continue: the search runs again, and says how its set differs from the confirmed one.
    isHoldingFourth = false;
    const resumed = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { resume_from_checkpoint_id: cancel.body.resume_checkpoint_id, expected_state_version: cancel.body.accepted_state_version },
    });
    expect(resumed.status).toBe(201);
    const resumedEvents = await h.events(resumed.body.run_id);
    expect(resumedEvents.at(-1)?.type).toBe("run.completed");
    const said = resultEvents(resumedEvents);
    expect(said.filter((event) => event.type === "results.added")).toHaveLength(4);
    expect(said.at(-1)).toMatchObject({
      type: "results.updated",
      step_id: "search",
      confirmed_result_ids: ["rec-1", "rec-2", "rec-3"],
      result_ids: ["rec-1", "rec-2", "rec-3", "rec-4"],
      added_result_ids: ["rec-4"],
      removed_result_ids: [],
    });
    const resumedSteps = (await h.api(`/v1/runs/${resumed.body.run_id}/steps`)).body.steps;
    expect(resumedSteps[0]).toMatchObject({ step_id: "search", status: "completed", reused_from_run_id: null });
    // The step's confirmed result carries the update with the records: the next step's material is stated.
    expect(resumedSteps[0].result).toEqual({
      records: RECORDS,
      update: { confirmedResultIds: ["rec-1", "rec-2", "rec-3"], addedResultIds: ["rec-4"], removedResultIds: [] },
    });
  });

  it("a search that completes without a Stop says no update, and its checkpoint is the step's own", async () => {
    isHoldingFourth = false;
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Find suppliers", { agent: "search" });
    const events = await h.events(run.run_id);
    expect(events.at(-1)?.type).toBe("run.completed");
    expect(resultEvents(events).map((event) => event.type)).toEqual(["results.added", "results.added", "results.added", "results.added"]);
    const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
    expect(steps[0].result).toEqual({ records: RECORDS, update: null });
  });

  it("a source that ignores the Stop and stays silent is waited for only up to the run's bound; two records confirmed", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Find suppliers", { agent: "silent-search" });
    let added = 0;
    await h.events(run.run_id, { until: (event) => event.type === "results.added" && ++added === 2 });
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel?wait=${SHIELD_MS * 10}`, { method: "POST", json: { reason: "user_pressed_stop" } });
    expect(cancel.body.status).toBe("cancelled");
    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints;
    const stop = checkpoints.find((checkpoint: any) => checkpoint.kind === "cancel_accepted");
    expect(stop.cancelled_generation.confirmed_results).toEqual([
      { step_id: "search", result_ids: ["rec-1", "rec-2"], is_complete: false, arrived_after_stop: 0 },
    ]);
  });
});
