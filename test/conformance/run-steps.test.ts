/**
 * The store contract for agents and plans (DESIGN §11), on every adapter: a run's agent and config,
 * labelled messages, the steps' bookkeeping rows (sticky once terminal), a step's work recorded as
 * a transition fenced like a publication, and a run's end closing the steps it leaves open.
 */
import { describe, expect, it } from "vitest";
import { checkStore } from "../../src/check/index.js";
import { createId, type RunRecord, type RunStepRecord } from "../../src/core/index.js";
import type { CompleteStepInput, StepUpdate, ThreadSnapshot } from "../../src/store/store.js";
import { adapters } from "./adapters.js";
import { expectKind, OTHER_TENANT, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick, newThread, newRun, runningRun, publishInput, cancel, snapshot, expectClean } = fx;

const save = (run: RunRecord, ...steps: StepUpdate[]) => store.saveSteps({ tenantId: run.tenantId, runId: run.runId, steps });

const completeInput = (run: RunRecord, stepId: string, overrides: Partial<CompleteStepInput> = {}): CompleteStepInput => ({
  tenantId: run.tenantId,
  runId: run.runId,
  stepId,
  checkpointId: createId("cp"),
  result: JSON.stringify({ answer: stepId }),
  now: tick(),
  ...overrides,
});

/** The run's steps by id, with only the fields named. */
async function stepsOf(run: RunRecord): Promise<Record<string, RunStepRecord>> {
  return Object.fromEntries((await store.listRunSteps(run.tenantId, run.runId)).map((step) => [step.stepId, step]));
}

/** A plan of four steps registered on `run`: a and b working, c after both, d after c. */
async function plan(run: RunRecord): Promise<void> {
  await save(
    run,
    { stepId: "a", ordinal: 0, status: "in_progress", title: "A", startedAt: fx.now },
    { stepId: "b", ordinal: 1, status: "children_in_progress", title: "B", startedAt: fx.now },
    { stepId: "c", ordinal: 2, status: "not_started", title: "C", dependsOn: ["a", "b"] },
    { stepId: "d", ordinal: 3, status: "not_started", title: "D", dependsOn: ["c"] },
  );
}

describe.each(adapters)("agent, config and label ($name)", (adapter) => {
  fx.use(adapter);

  it("a run keeps its agent and config; without them it is `chat` with none", async () => {
    const config = JSON.stringify({ depth: 2, sources: ["web"] });
    const planned = await newRun((await newThread()).threadId, { agent: "researcher", config });
    const plain = await newRun((await newThread()).threadId);

    expect(planned).toMatchObject({ agent: "researcher", config });
    expect(plain).toMatchObject({ agent: "chat", config: null });
    expect(await store.getRun(TENANT, planned.runId)).toEqual(planned);
    expect((await store.listActiveRuns(TENANT, planned.threadId)).map((run) => [run.agent, run.config])).toEqual([["researcher", config]]);
    expect((await store.listActiveRuns(TENANT, plain.threadId)).map((run) => [run.agent, run.config])).toEqual([["chat", null]]);
  });

  it("a published message keeps its label; every other message has none", async () => {
    const run = await runningRun();
    const labelled = expectKind(await store.publishMessage(publishInput(run, { label: "Findings" })), "published");
    const plain = expectKind(await store.publishMessage(publishInput(run, { completedStepId: "step-2" })), "published");

    expect(labelled.message.label).toBe("Findings");
    expect(plain.message.label).toBeNull();
    expect((await store.listMessages(TENANT, run.threadId)).map((message) => message.label)).toEqual([null, "Findings", null]);
  });
});

describe.each(adapters)("saveSteps ($name)", (adapter) => {
  fx.use(adapter);

  it("creates each row in the run's thread, in one call, ordinals given or next", async () => {
    const run = await runningRun();
    await plan(run);
    await save(run, { stepId: "a/tool-1", status: "in_progress", parentStepId: "a" });

    const steps = await store.listRunSteps(TENANT, run.runId);

    expect(steps.map((step) => [step.stepId, step.ordinal])).toEqual([
      ["a", 0],
      ["b", 1],
      ["c", 2],
      ["d", 3],
      ["a/tool-1", 4],
    ]);
    expect(steps[2]).toEqual({
      tenantId: TENANT,
      runId: run.runId,
      threadId: run.threadId,
      stepId: "c",
      ordinal: 2,
      parentStepId: null,
      title: "C",
      dependsOn: ["a", "b"],
      status: "not_started",
      inputHash: null,
      startedAt: null,
      endedAt: null,
      checkpointId: null,
      messageId: null,
      result: null,
      reusedFromRunId: null,
      error: null,
    });
    expect(steps[4]).toMatchObject({ parentStepId: "a", dependsOn: [], title: null });
  });

  it("an update changes what it names and keeps the rest", async () => {
    const run = await runningRun();
    await plan(run);

    await save(run, { stepId: "c", status: "in_progress", startedAt: 42, inputHash: "h-c" });

    expect((await stepsOf(run)).c).toMatchObject({
      status: "in_progress",
      startedAt: 42,
      inputHash: "h-c",
      title: "C",
      ordinal: 2,
      dependsOn: ["a", "b"],
    });
  });

  it("never moves a row out of a terminal status; a terminal row only fills in what it lacks", async () => {
    const run = await runningRun();
    await save(run, { stepId: "a", ordinal: 0, status: "in_progress" }, { stepId: "b", ordinal: 1, status: "not_started", title: "B" });
    await save(run, { stepId: "a", status: "failed", endedAt: 50, error: "the search timed out" }, { stepId: "b", status: "cancelled", endedAt: 51 });

    await save(
      run,
      { stepId: "a", status: "in_progress", endedAt: null, error: null, title: "A, late" },
      { stepId: "b", status: "completed", endedAt: 60, error: "late", title: "B, late", startedAt: 59 },
    );

    const steps = await stepsOf(run);
    expect(steps.a).toMatchObject({ status: "failed", endedAt: 50, error: "the search timed out", title: "A, late" });
    expect(steps.b).toMatchObject({ status: "cancelled", endedAt: 51, error: null, title: "B", startedAt: 59 });
  });

  it("never replaces a step's durable record (checkpoint, message, result) once written", async () => {
    const run = await runningRun();
    await save(run, { stepId: "a", ordinal: 0, status: "in_progress" });
    const completed = expectKind(await store.completeStep(completeInput(run, "a")), "completed");

    await save(run, { stepId: "a", status: "completed", checkpointId: null, messageId: null, result: null, endedAt: tick() });
    await save(run, { stepId: "a", status: "completed", checkpointId: "cp_other", result: "{}" });

    expect((await stepsOf(run)).a).toMatchObject({
      status: "completed",
      checkpointId: completed.checkpoint.checkpointId,
      result: JSON.stringify({ answer: "a" }),
      messageId: null,
    });
  });

  it("writes nothing for an unknown run or another tenant's run", async () => {
    const run = await runningRun();

    await store.saveSteps({ tenantId: TENANT, runId: "run_missing", steps: [{ stepId: "a", status: "in_progress" }] });
    await store.saveSteps({ tenantId: OTHER_TENANT, runId: run.runId, steps: [{ stepId: "a", status: "in_progress" }] });

    expect(await store.listRunSteps(TENANT, run.runId)).toEqual([]);
    expect(await store.listRunSteps(TENANT, "run_missing")).toEqual([]);
    expect(await store.listRunSteps(OTHER_TENANT, run.runId)).toEqual([]);
  });

  it("after the run ended, a late update closes the step as the run's end did", async () => {
    const run = await runningRun();
    const failed = await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "failed", from: ["running"], stats: {}, now: tick() });

    await save(run, { stepId: "b", status: "in_progress", startedAt: fx.now }, { stepId: "c", status: "not_started" }, { stepId: "d", status: "completed" });

    const steps = await stepsOf(run);
    expect(steps.b).toMatchObject({ status: "failed", endedAt: failed!.endedAt });
    expect(steps.c).toMatchObject({ status: "cancelled", endedAt: failed!.endedAt });
    expect(steps.d).toMatchObject({ status: "completed", endedAt: null });
  });
});

describe.each(adapters)("completeStep ($name)", (adapter) => {
  fx.use(adapter);

  it("is a transition: one version up with a step_completed checkpoint, the result on the step's row", async () => {
    const run = await runningRun();
    await plan(run);
    const before = (await store.getThread(TENANT, run.threadId))!;
    const input = completeInput(run, "a");

    const completed = expectKind(await store.completeStep(input), "completed");

    expect(completed.checkpoint).toEqual({
      tenantId: TENANT,
      checkpointId: input.checkpointId,
      threadId: run.threadId,
      parentCheckpointId: before.headCheckpointId,
      stateVersion: before.stateVersion + 1,
      kind: "step_completed",
      runId: run.runId,
      messageId: null,
      completedStepId: "a",
      pendingStep: null,
      resumePolicy: null,
      cancelledGeneration: null,
      createdAt: input.now,
    });
    expect(completed.thread).toMatchObject({ stateVersion: before.stateVersion + 1, headCheckpointId: input.checkpointId, stats: before.stats });
    expect(await store.getThread(TENANT, run.threadId)).toEqual(completed.thread);
    expect((await store.getRun(TENANT, run.runId))?.stateVersion).toBe(before.stateVersion + 1);
    expect((await store.listCheckpoints(TENANT, run.threadId)).at(-1)).toEqual(completed.checkpoint);
    // The status is the executor's to set: the row only gains the durable record.
    expect(completed.step).toMatchObject({ stepId: "a", status: "in_progress", title: "A", checkpointId: input.checkpointId, result: input.result });
    expect((await stepsOf(run)).a).toEqual(completed.step);
  });

  it("creates the step's row when the journal has not written it (in_progress, the next ordinal)", async () => {
    const run = await runningRun();
    await plan(run);

    const completed = expectKind(await store.completeStep(completeInput(run, "e")), "completed");

    expect(completed.step).toMatchObject({ stepId: "e", status: "in_progress", ordinal: 4, threadId: run.threadId, dependsOn: [] });
    await save(run, { stepId: "e", status: "completed", endedAt: tick() });
    await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["running"], stats: {}, now: tick() });
    await expectClean();
  });

  it("after an accepted cancel, is rejected and writes nothing", async () => {
    const run = await runningRun();
    await plan(run);
    expectKind(await cancel(run), "accepted");
    const before = { ...(await snapshot(TENANT, run.threadId, run.runId)), steps: await store.listRunSteps(TENANT, run.runId) };

    const late = expectKind(await store.completeStep(completeInput(run, "a")), "rejected");

    expect(late.run?.status).toBe("cancel_requested");
    expect({ ...(await snapshot(TENANT, run.threadId, run.runId)), steps: await store.listRunSteps(TENANT, run.runId) }).toEqual(before);
  });

  it("is fenced by attempt, and rejected for a queued or unknown run", async () => {
    const run = await runningRun({ owner: "worker-1" });
    expect((await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["running"], to: "queued", now: tick() }))?.attempt).toBe(2);
    const taken = await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "worker-2", leaseExpiresAt: fx.now + 30_000, now: tick() });
    const before = await snapshot(TENANT, run.threadId, run.runId);

    const stale = expectKind(await store.completeStep(completeInput(run, "a", { attempt: 1 })), "rejected");
    const queued = await newRun((await newThread()).threadId);

    expect(stale.run?.attempt).toBe(2);
    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
    expect(await store.listRunSteps(TENANT, run.runId)).toEqual([]);
    expect((await store.completeStep(completeInput(queued, "a"))).kind).toBe("rejected");
    expect(expectKind(await store.completeStep(completeInput({ ...run, runId: "run_missing" }, "a")), "rejected").run).toBeUndefined();
    expect(expectKind(await store.completeStep(completeInput({ ...run, tenantId: OTHER_TENANT }, "a")), "rejected").run).toBeUndefined();
    expect((await store.completeStep(completeInput(taken!, "a", { attempt: 2 }))).kind).toBe("completed");
  });
});

describe.each(adapters)("publishMessage with recordsStep ($name)", (adapter) => {
  fx.use(adapter);

  it("records the publication on the step's row in the same transaction", async () => {
    const run = await runningRun();
    await plan(run);
    const input = publishInput(run, { completedStepId: "b", recordsStep: true, label: "B" });

    const published = expectKind(await store.publishMessage(input), "published");

    expect(published.checkpoint.completedStepId).toBe("b");
    expect((await stepsOf(run)).b).toMatchObject({
      status: "children_in_progress",
      title: "B",
      checkpointId: input.checkpointId,
      messageId: input.messageId,
      result: null,
    });
  });

  it("creates the row when the journal has not written it; without recordsStep, writes no step", async () => {
    const run = await runningRun();
    const plain = publishInput(run, { completedStepId: "model-1" });
    const recorded = publishInput(run, { completedStepId: "model-2", recordsStep: true });

    expectKind(await store.publishMessage(plain), "published");
    expectKind(await store.publishMessage(recorded), "published");

    expect(await store.listRunSteps(TENANT, run.runId)).toEqual([
      expect.objectContaining({ stepId: "model-2", ordinal: 0, status: "in_progress", checkpointId: recorded.checkpointId, messageId: recorded.messageId }),
    ]);
  });

  it("completing the run, completes its step and closes the steps left open", async () => {
    const run = await runningRun();
    await plan(run);
    await save(run, { stepId: "a", status: "completed", endedAt: tick() });
    const input = publishInput(run, { completedStepId: "b", recordsStep: true, complete: true });

    expectKind(await store.publishMessage(input), "published");

    const steps = await stepsOf(run);
    expect(steps.b).toMatchObject({ status: "completed", endedAt: input.now, checkpointId: input.checkpointId });
    expect([steps.a!.status, steps.c!.status, steps.d!.status]).toEqual(["completed", "cancelled", "cancelled"]);
    expect(steps.c!.endedAt).toBe(input.now);
  });
});

describe.each(adapters)("a run's end closes its open steps ($name)", (adapter) => {
  fx.use(adapter);

  /** A running plan: `a` completed with its checkpoint, b and c working, d not started. */
  async function workingPlan(): Promise<RunRecord> {
    const run = await runningRun();
    await save(
      run,
      { stepId: "a", ordinal: 0, status: "in_progress", startedAt: fx.now },
      { stepId: "b", ordinal: 1, status: "in_progress", startedAt: fx.now },
      { stepId: "c", ordinal: 2, status: "children_in_progress", startedAt: fx.now },
      { stepId: "d", ordinal: 3, status: "not_started", dependsOn: ["b"] },
    );
    expectKind(await store.completeStep(completeInput(run, "a")), "completed");
    await save(run, { stepId: "a", status: "completed", endedAt: tick() });
    return run;
  }

  it("a cancelled run: every step not ended is cancelled, at the finish's time", async () => {
    const run = await workingPlan();
    const completedAt = (await stepsOf(run)).a!.endedAt;
    expectKind(await cancel(run), "accepted");

    const now = tick();
    await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now });

    const steps = await store.listRunSteps(TENANT, run.runId);
    expect(steps.map((step) => [step.stepId, step.status, step.endedAt])).toEqual([
      ["a", "completed", completedAt],
      ["b", "cancelled", now],
      ["c", "cancelled", now],
      ["d", "cancelled", now],
    ]);
    await expectClean();
  });

  it("a cancelled run writes the step rows it is given (a Stop's cut steps) in its transaction, then closes the rest", async () => {
    const run = await workingPlan();
    expectKind(await cancel(run), "accepted");
    const stoppedAt = tick();
    const now = tick();
    const cut: StepUpdate = { stepId: "b", status: "cancelled", endedAt: stoppedAt, error: "stopped" };

    await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, steps: [cut], now });

    const steps = await store.listRunSteps(TENANT, run.runId);
    expect(steps.map((step) => [step.stepId, step.status, step.endedAt, step.error])).toEqual([
      ["a", "completed", steps[0]!.endedAt, null],
      ["b", "cancelled", stoppedAt, "stopped"],
      ["c", "cancelled", now, null],
      ["d", "cancelled", now, null],
    ]);
    // Refused (no longer this run's to finish): the rows it carried are not written either.
    const other = await workingPlan();
    expect(await store.finishRun({ tenantId: TENANT, runId: other.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, steps: [cut], now: tick() })).toBeUndefined();
    expect((await stepsOf(other)).b).toMatchObject({ status: "in_progress", error: null });
    await expectClean();
  });

  it("a failed run: the steps that were working fail, those not started are cancelled", async () => {
    const run = await workingPlan();

    const now = tick();
    await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "failed", from: ["running"], stats: {}, failureReason: "error", now });

    const steps = await store.listRunSteps(TENANT, run.runId);
    expect(steps.map((step) => [step.stepId, step.status, step.endedAt])).toEqual([
      ["a", "completed", steps[0]!.endedAt],
      ["b", "failed", now],
      ["c", "failed", now],
      ["d", "cancelled", now],
    ]);
    await expectClean();
  });

  it("a completed run: a step left open is cancelled", async () => {
    const run = await workingPlan();

    await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["running"], stats: {}, now: tick() });

    expect((await store.listRunSteps(TENANT, run.runId)).map((step) => step.status)).toEqual(["completed", "cancelled", "cancelled", "cancelled"]);
    await expectClean();
  });

  it("a finish that is refused changes no step", async () => {
    const run = await workingPlan();
    const before = await store.listRunSteps(TENANT, run.runId);

    expect(await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["cancelling"], stats: {}, now: tick() })).toBeUndefined();
    expect(await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "failed", from: ["running"], stats: {}, attempt: 7, now: tick() })).toBeUndefined();

    expect(await store.listRunSteps(TENANT, run.runId)).toEqual(before);
  });

  it("the steps of another run of the thread are left alone", async () => {
    const first = await workingPlan();
    await store.finishRun({ tenantId: TENANT, runId: first.runId, to: "completed", from: ["running"], stats: {}, now: tick() });
    const second = await runningRun({ threadId: first.threadId });
    await save(second, { stepId: "a", ordinal: 0, status: "completed", checkpointId: (await stepsOf(first)).a!.checkpointId, reusedFromRunId: first.runId });
    await save(second, { stepId: "b", ordinal: 1, status: "in_progress", startedAt: fx.now });
    const firstSteps = await store.listRunSteps(TENANT, first.runId);

    await store.finishRun({ tenantId: TENANT, runId: second.runId, to: "failed", from: ["running"], stats: {}, now: tick() });

    expect(await store.listRunSteps(TENANT, first.runId)).toEqual(firstSteps);
    expect((await stepsOf(second)).b?.status).toBe("failed");
    await expectClean();
  });

  it("a queued run handed back with steps, cancelled before its next attempt, closes them", async () => {
    const run = await workingPlan();
    await store.transitionRun({ tenantId: TENANT, runId: run.runId, from: ["running"], to: "queued", now: tick() });

    const accepted = expectKind(await cancel(run), "accepted");

    expect(accepted.run.status).toBe("cancelled");
    expect((await store.listRunSteps(TENANT, run.runId)).map((step) => step.status)).toEqual(["completed", "cancelled", "cancelled", "cancelled"]);
    await expectClean();
  });
});

describe.each(adapters)("listRunSteps and scanThreads ($name)", (adapter) => {
  fx.use(adapter);

  it("lists a run's steps by ordinal, whatever order they were written in; never another tenant's", async () => {
    const run = await runningRun();
    await save(run, { stepId: "z", ordinal: 2, status: "not_started" }, { stepId: "x", ordinal: 0, status: "in_progress" });
    await save(run, { stepId: "y", ordinal: 1, status: "not_started" });
    const foreign = await runningRun({ tenantId: OTHER_TENANT });
    await save(foreign, { stepId: "x", ordinal: 0, status: "in_progress" });

    expect((await store.listRunSteps(TENANT, run.runId)).map((step) => step.stepId)).toEqual(["x", "y", "z"]);
    expect(await store.listRunSteps(OTHER_TENANT, run.runId)).toEqual([]);
    expect(await store.listRunSteps(TENANT, foreign.runId)).toEqual([]);
    expect((await store.listRunSteps(OTHER_TENANT, foreign.runId)).map((step) => step.tenantId)).toEqual([OTHER_TENANT]);
  });

  it("a thread's snapshot carries its runs' steps, each run's in order", async () => {
    const run = await runningRun();
    await save(run, { stepId: "b", ordinal: 1, status: "not_started" }, { stepId: "a", ordinal: 0, status: "in_progress" });
    const other = await runningRun();
    await save(other, { stepId: "only", ordinal: 0, status: "in_progress" });

    const snapshots: ThreadSnapshot[] = [];
    for await (const each of store.scanThreads()) snapshots.push(each);

    const stepsOfThread = (threadId: string) => snapshots.find((each) => each.thread.threadId === threadId)!.steps.map((step) => step.stepId);
    expect(stepsOfThread(run.threadId)).toEqual(["a", "b"]);
    expect(stepsOfThread(other.threadId)).toEqual(["only"]);
    expect((await checkStore(store)).violations).toEqual([]);
  });
});
