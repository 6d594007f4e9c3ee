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
  const stop = { isEnding: false };
  const journal = new StepJournal({
    run: () => ({ tenantId: "t", runId: "run_1" }) as RunRecord,
    store,
    clock: { now: () => now++ },
    logger: silentLogger,
    emit: (draft) => events.push(draft),
    isEnding: () => stop.isEnding,
  });
  const finishWrite = () => pending.shift()?.();
  return { journal, writes, events, finishWrite, stop };
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
    // One write in flight: a's registration and start, one row (the start's write took the
    // registration waiting for its turn to end); everything after it waits, then goes as one.
    expect(writes.map((write) => write.steps.map((step) => [step.stepId, step.status, step.ordinal]))).toEqual([[["a", "in_progress", 0]]]);
    finishWrite();
    await new Promise(setImmediate);
    expect(writes).toHaveLength(2);
    expect(writes[1]!.steps.map((step) => [step.stepId, step.status, step.ordinal])).toEqual([
      ["b", "cancelled", 1],
      ["c", "cancelled", 2],
    ]);
    expect(writes[1]!.steps[0]).toMatchObject({ error: "Error: stopped", endedAt: expect.any(Number), startedAt: null });
    const flushed = journal.flush();
    finishWrite();
    await flushed;
    expect(writes).toHaveLength(2);
  });

  it("writes a registration that no start follows in its turn once the turn is over", async () => {
    const { journal, writes, events, finishWrite } = setUp();
    journal.declare({ stepId: "a", parentStepId: null, title: null, dependsOn: ["z"], inputHash: null });
    journal.update("a", "not_started");
    expect(events).toHaveLength(1);
    expect(writes).toHaveLength(0);
    await Promise.resolve();
    expect(writes.map((write) => write.steps.map((step) => [step.stepId, step.status]))).toEqual([[["a", "not_started"]]]);
    finishWrite();
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

  it("writes no row for the end of a step whose publication ended the run: the run's end wrote its row closed", async () => {
    const { journal, writes, events, finishWrite } = setUp();
    journal.declare({ stepId: "a", parentStepId: null, title: null, dependsOn: [], inputHash: null });
    journal.update("a", "in_progress");
    finishWrite();
    await new Promise(setImmediate);
    expect(writes).toHaveLength(1);
    journal.recorded("a", { checkpointId: "cp_1", messageId: "msg_1", result: null, reusedFromRunId: null }, true);
    journal.update("a", "completed");
    // The event goes as always; the row is already what it would write.
    expect(events.at(-1)).toMatchObject({ type: "step.updated", step_id: "a", status: "completed", checkpoint_id: "cp_1" });
    await journal.flush();
    expect(writes).toHaveLength(1);
  });

  it("holds the rows of a run a Stop is ending for its end to write, after the write in flight; rows handed back are written by flush", async () => {
    const { journal, writes, events, finishWrite, stop } = setUp();
    for (const stepId of ["a", "b"]) journal.declare({ stepId, parentStepId: null, title: null, dependsOn: [], inputHash: null });
    journal.update("a", "in_progress");
    journal.update("b", "in_progress");
    stop.isEnding = true;
    journal.update("a", "cancelled", new Error("stopped"));
    journal.update("b", "cancelled", new Error("stopped"));
    // The events go at once; no write starts for them: only a's first row is in flight.
    expect(events.filter((event) => event.type === "step.updated" && event.status === "cancelled")).toHaveLength(2);
    expect(writes).toHaveLength(1);
    const taking = journal.takeUnwritten();
    finishWrite();
    // The write in flight lands first; what gathered behind it is handed over, not written.
    const taken = await taking;
    expect(taken.map((row) => [row.stepId, row.status, row.error])).toEqual([
      ["b", "cancelled", "Error: stopped"],
      ["a", "cancelled", "Error: stopped"],
    ]);
    expect(writes).toHaveLength(1);
    // The run's end did not write them (it lost its compare-and-set): flush writes them as they stand.
    journal.returnUnwritten(taken);
    const flushed = journal.flush();
    await new Promise(setImmediate);
    expect(writes).toHaveLength(2);
    expect(writes[1]!.steps.map((row) => [row.stepId, row.status])).toEqual([
      ["b", "cancelled"],
      ["a", "cancelled"],
    ]);
    finishWrite();
    await flushed;
  });
});
