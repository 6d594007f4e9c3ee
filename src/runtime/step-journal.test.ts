import { describe, expect, it } from "vitest";
import type { RunEventDraft, RunRecord } from "../core/index.js";
import { silentLogger } from "../core/logger.js";
import type { SaveStepsInput, Store } from "../store/index.js";
import { StepJournal } from "./step-journal.js";

function setUp() {
  const writes: SaveStepsInput[] = [];
  const pending: (() => void)[] = [];
  // Each write waits until the test lets it finish: what arrives meanwhile must be coalesced.
  const store = {
    saveSteps: (input: SaveStepsInput) => {
      writes.push(structuredClone(input));
      return new Promise<void>((resolve) => pending.push(resolve));
    },
  } as unknown as Store;
  const events: RunEventDraft[] = [];
  let now = 1_000;
  const journal = new StepJournal({
    run: () => ({ tenantId: "t", runId: "run_1" }) as RunRecord,
    store,
    clock: { now: () => now++ },
    logger: silentLogger,
    emit: (draft) => events.push(draft),
  });
  const finishWrite = () => pending.shift()?.();
  return { journal, writes, events, finishWrite };
}

describe("StepJournal", () => {
  it("streams every change at once and writes the rows behind it, in order, coalescing while a write is in flight", async () => {
    const { journal, writes, events, finishWrite } = setUp();
    for (const stepId of ["a", "b", "c"]) journal.declare({ stepId, parentStepId: null, title: stepId.toUpperCase(), dependsOn: stepId === "c" ? ["a", "b"] : [], inputHash: null });
    journal.update("a", "not_started");
    journal.update("a", "in_progress");
    journal.update("b", "not_started");
    journal.update("c", "not_started");
    journal.update("b", "cancelled", new Error("stopped"));
    journal.update("c", "cancelled");
    expect(events.map((event) => event.type === "step.updated" && [event.step_id, event.status])).toEqual([
      ["a", "not_started"],
      ["a", "in_progress"],
      ["b", "not_started"],
      ["c", "not_started"],
      ["b", "cancelled"],
      ["c", "cancelled"],
    ]);
    // One write in flight (a's registration); everything after it waits, then goes as one.
    expect(writes).toHaveLength(1);
    finishWrite();
    await new Promise(setImmediate);
    expect(writes).toHaveLength(2);
    expect(writes[1]!.steps.map((step) => [step.stepId, step.status, step.ordinal])).toEqual([
      ["a", "in_progress", 0],
      ["b", "cancelled", 1],
      ["c", "cancelled", 2],
    ]);
    expect(writes[1]!.steps[1]).toMatchObject({ error: "Error: stopped", endedAt: expect.any(Number), startedAt: null });
    const flushed = journal.flush();
    finishWrite();
    await flushed;
    expect(writes).toHaveLength(2);
  });

  it("names a step's durable record in its row and its completed event, and lists what is in progress", async () => {
    const { journal, writes, events, finishWrite } = setUp();
    journal.declare({ stepId: "a", parentStepId: null, title: null, dependsOn: [], inputHash: "h" });
    journal.declare({ stepId: "b", parentStepId: "a", title: null, dependsOn: [], inputHash: null });
    journal.update("a", "in_progress");
    journal.update("b", "in_progress");
    expect(journal.inProgress()).toEqual(["a", "b"]);
    journal.recorded("a", { checkpointId: "cp_1", messageId: null, result: "[1]", reusedFromRunId: "run_0" });
    journal.update("a", "completed");
    expect(journal.inProgress()).toEqual(["b"]);
    expect(events.at(-1)).toMatchObject({ type: "step.updated", step_id: "a", status: "completed", checkpoint_id: "cp_1", reused: true });
    finishWrite();
    await new Promise(setImmediate);
    expect(writes.at(-1)!.steps.find((step) => step.stepId === "a")).toMatchObject({ checkpointId: "cp_1", result: "[1]", reusedFromRunId: "run_0", inputHash: "h" });
    finishWrite();
  });
});
