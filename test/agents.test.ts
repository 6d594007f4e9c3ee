/**
 * Agents as code through the HTTP API (issue 14, DESIGN §11): a team's own agent deployed with
 * `startTidemark({ agents })`, its steps on the wire, a step cut by a Stop re-run on Continue while
 * completed ones are reused, config validation, two plans that never affect each other, TERMINATE
 * as its own act, and the chat loop's independent tool calls running at once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineAgent, type StepRunContext } from "../src/agents/index.js";
import { defineTool } from "../src/tools/index.js";
import type { ChatModel, ModelStreamPart } from "../src/core/model.js";
import { startHarness, type Harness } from "./support/harness.js";

/** A gate a step waits on until the test opens it; a Stop aborts the wait. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, wait: (signal: AbortSignal) => Promise.race([opened, new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }))]) };
}

/** Counts each step's runs, so a test can tell a reused step from one that ran again. */
const runs = new Map<string, number>();
const slowGate = { current: gate() };
const counted = async (step: StepRunContext<{ items: string[] }>, value: unknown) => {
  runs.set(step.stepId, (runs.get(step.stepId) ?? 0) + 1);
  return value;
};

const pipeline = defineAgent({
  name: "pipeline",
  description: "Fetch, then a slow transform, then a summary.",
  configSchema: z.object({ items: z.array(z.string()).min(1).max(5) }).strict(),
  concurrency: 2,
  steps: ({ config }) => [
    { id: "fetch", title: "Fetch", input: config.items, run: (step) => counted(step, config.items.map((item) => item.toUpperCase())) },
    {
      id: "transform",
      title: "Transform",
      dependsOn: ["fetch"],
      run: async (step) => {
        runs.set(step.stepId, (runs.get(step.stepId) ?? 0) + 1);
        await slowGate.current.wait(step.signal);
        return step.result<string[]>("fetch").map((item) => `${item}!`);
      },
    },
    { id: "summary", title: "Summary", dependsOn: ["transform"], run: async (step) => step.publish(step.result<string[]>("transform").join(" "), { final: true }) },
  ],
});

/** A step that does not honour its signal: a Stop must wait for it, and say so. */
const stubbornGate = { current: gate() };
const stubborn = defineAgent({
  name: "stubborn",
  steps: () => [
    {
      id: "slow",
      run: async () => {
        await stubbornGate.current.wait(new AbortController().signal);
        return "done late";
      },
    },
    { id: "after", dependsOn: ["slow"], run: async () => "never" },
  ],
});

describe("agents as code over HTTP", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ agents: [pipeline, stubborn] });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("lists the deployed agents with their config schema, beside the built-ins", async () => {
    const { status, body } = await h.api("/v1/agents");
    expect(status).toBe(200);
    expect(body.agents.map((agent: any) => agent.name)).toEqual(["chat", "research", "pipeline", "stubborn"]);
    const listed = body.agents.find((agent: any) => agent.name === "pipeline");
    expect(listed).toMatchObject({ description: "Fetch, then a slow transform, then a summary.", config_schema: { type: "object" } });
    expect(listed.config_schema.properties.items).toMatchObject({ type: "array", minItems: 1, maxItems: 5 });
  });

  it("refuses an unknown agent (404) and a config its schema refuses (400 with the issues), creating nothing", async () => {
    const threadId = await h.createThread();
    const created = (await h.api(`/v1/threads/${threadId}`)).body;
    const unknown = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "hi" }, agent: "nobody" } });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: "agent_not_found", agent: "nobody" });
    const invalid = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "hi" }, agent: "pipeline", config: { items: [] } } });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({ error: "invalid_config", agent: "pipeline", issues: [{ path: "items" }] });
    for (const body of [{ agent: "" }, { agent: "x".repeat(65) }, { config: [1] }, { config: "x" }, { agent: "chat\u0000" }]) {
      const refused = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "hi" }, ...body } });
      expect(refused.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect(refused.status, JSON.stringify(body)).toBeLessThan(500);
    }
    const thread = await h.api(`/v1/threads/${threadId}`);
    expect(thread.body).toMatchObject({ state_version: created.state_version, head_checkpoint_id: created.head_checkpoint_id, active_run_id: null });
  });

  it("a Stop cuts the step in progress and cancels the rest; Continue reuses the completed step and re-runs the cut one", async () => {
    runs.clear();
    slowGate.current = gate();
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Process these", { agent: "pipeline", config: { items: ["a", "b"] } });
    expect(run).toMatchObject({ agent: "pipeline", config: { items: ["a", "b"] } });
    await h.events(run.run_id, { until: (event) => event.type === "step.updated" && event.step_id === "transform" && event.status === "in_progress" });
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel`, { method: "POST", json: {} });
    expect(cancel.status).toBe(202);
    const events = await h.events(run.run_id);
    expect(events.at(-1)?.type).toBe("run.cancelled");
    const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
    expect(steps.map((step: any) => [step.step_id, step.status, step.started_at !== null])).toEqual([
      ["fetch", "completed", true],
      ["transform", "cancelled", true],
      ["summary", "cancelled", false],
    ]);
    expect(steps[0]).toMatchObject({ result: ["A", "B"], checkpoint_id: expect.stringMatching(/^cp_/) });
    // The step's checkpoint is a transition of the thread, before the cancel's.
    const checkpoints = (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints;
    const completedAt = checkpoints.find((checkpoint: any) => checkpoint.checkpoint_id === steps[0].checkpoint_id);
    expect(completedAt).toMatchObject({ kind: "step_completed", completed_step_id: "fetch", run_id: run.run_id });
    expect(completedAt.state_version).toBeLessThan(cancel.body.accepted_state_version);

    slowGate.current = gate();
    slowGate.current.open();
    const resumed = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { resume_from_checkpoint_id: cancel.body.resume_checkpoint_id, expected_state_version: cancel.body.accepted_state_version },
    });
    expect(resumed.status).toBe(201);
    expect(resumed.body).toMatchObject({ agent: "pipeline", config: { items: ["a", "b"] } });
    const resumedEvents = await h.events(resumed.body.run_id);
    expect(resumedEvents.at(-1)?.type).toBe("run.completed");
    expect(resumedEvents.find((event) => event.type === "step.updated" && event.step_id === "fetch" && event.status === "completed")).toMatchObject({ reused: true });
    expect(Object.fromEntries(runs)).toEqual({ fetch: 1, transform: 2 });
    const resumedSteps = (await h.api(`/v1/runs/${resumed.body.run_id}/steps`)).body.steps;
    expect(resumedSteps.map((step: any) => [step.step_id, step.status, step.reused_from_run_id])).toEqual([
      ["fetch", "completed", run.run_id],
      ["transform", "completed", null],
      ["summary", "completed", null],
    ]);
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    expect(history.at(-1)).toMatchObject({ role: "assistant", content: "A! B!" });
    await h.expectNoViolations();
  });

  it("a run is cancelled only once every started step settled; run.cancelling names the steps still finishing", async () => {
    stubbornGate.current = gate();
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Slowly", { agent: "stubborn" });
    await h.events(run.run_id, { until: (event) => event.type === "step.updated" && event.step_id === "slow" && event.status === "in_progress" });
    const cancel = await h.api(`/v1/runs/${run.run_id}/cancel`, { method: "POST", json: {} });
    expect(cancel.status).toBe(202);
    const untilCancelling = await h.events(run.run_id, { until: (event) => event.type === "run.cancelling" });
    expect(untilCancelling.at(-1)).toMatchObject({ type: "run.cancelling", active_operation: null, steps: ["slow"] });
    // Still finishing: not reported cancelled while its step runs.
    expect((await h.api(`/v1/runs/${run.run_id}`)).body.status).toBe("cancel_requested");
    stubbornGate.current.open();
    const events = await h.events(run.run_id);
    expect(events.at(-1)?.type).toBe("run.cancelled");
    const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
    // Its late result came after the cancel was accepted: not kept.
    expect(steps.map((step: any) => [step.step_id, step.status, step.checkpoint_id])).toEqual([
      ["slow", "cancelled", null],
      ["after", "cancelled", null],
    ]);
    await h.expectNoViolations();
  });

  it("two plans on two threads never affect each other: a Stop on one leaves the other running to its end", async () => {
    slowGate.current = gate();
    const [first, second] = [await h.createThread(), await h.createThread()];
    const stopped = await h.startRun(first, "One", { agent: "research", config: { subtasks: ["a", "b", "c"], max_parallel: 2 } });
    const kept = await h.startRun(second, "Two", { agent: "research", config: { subtasks: ["d", "e", "f"], max_parallel: 2 } });
    await h.events(stopped.run_id, { until: (event) => event.type === "step.updated" && event.status === "in_progress" && event.step_id.startsWith("subtask-") });
    await h.api(`/v1/runs/${stopped.run_id}/cancel`, { method: "POST", json: {} });
    const [stoppedEvents, keptEvents] = await Promise.all([h.events(stopped.run_id), h.events(kept.run_id)]);
    expect(stoppedEvents.at(-1)?.type).toBe("run.cancelled");
    expect(keptEvents.at(-1)?.type).toBe("run.completed");
    const keptSteps = (await h.api(`/v1/runs/${kept.run_id}/steps`)).body.steps;
    expect(keptSteps.every((step: any) => step.status === "completed")).toBe(true);
    await h.expectNoViolations();
  });

  it("TERMINATE stays its own act: deleting the thread cancels its plan and the thread answers 404", async () => {
    slowGate.current = gate();
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Go", { agent: "pipeline", config: { items: ["x"] } });
    await h.events(run.run_id, { until: (event) => event.type === "step.updated" && event.step_id === "transform" && event.status === "in_progress" });
    const deleted = await h.api(`/v1/threads/${threadId}`, { method: "DELETE" });
    expect(deleted.status).toBeLessThan(300);
    const events = await h.events(run.run_id);
    expect(events.at(-1)?.type).toBe("run.cancelled");
    expect((await h.api(`/v1/threads/${threadId}`)).status).toBe(404);
    const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
    expect(steps.map((step: any) => step.status)).toEqual(["completed", "cancelled", "cancelled"]);
  });
});

/** A model that asks for two tool calls, then answers once it has their results. */
function twoToolCallsModel(): ChatModel {
  return {
    id: "two-calls",
    async *stream(request): AsyncGenerator<ModelStreamPart> {
      const hasResults = request.messages.some((message) => message.role === "tool");
      if (hasResults) {
        yield { type: "text-delta", text: "Both done." };
      } else {
        yield { type: "text-delta", text: "Looking both up." };
        yield { type: "tool-call", toolCall: { toolCallId: "call_1", toolName: "lookup", input: JSON.stringify({ key: "one" }) } };
        yield { type: "tool-call", toolCall: { toolCallId: "call_2", toolName: "lookup", input: JSON.stringify({ key: "two" }) } };
      }
      yield { type: "finish", finishReason: hasResults ? "stop" : "tool-calls" };
    },
  };
}

describe("the chat agent's tool calls", () => {
  let h: Harness;
  const started: string[] = [];
  const bothStarted = gate();
  beforeAll(async () => {
    // Each call waits until both have started: run one after another, they would never finish.
    const lookup = defineTool({
      name: "lookup",
      description: "Looks a key up.",
      effect: "none",
      input: z.object({ key: z.string() }),
      execute: async ({ key }, { signal }) => {
        started.push(key);
        if (started.length === 2) bothStarted.open();
        await bothStarted.wait(signal);
        return `value of ${key}`;
      },
    });
    h = await startHarness({ model: twoToolCallsModel(), tools: [lookup] });
  });
  afterAll(async () => {
    await h?.close();
  });

  it("runs a model step's independent tool calls at once, each a step of its own", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "Look up one and two");
    const events = await h.events(run.run_id);
    expect(events.at(-1)?.type).toBe("run.completed");
    expect(started.sort()).toEqual(["one", "two"]);
    const steps = (await h.api(`/v1/runs/${run.run_id}/steps`)).body.steps;
    expect(steps.map((step: any) => [step.step_id, step.status, step.parent_step_id, step.depends_on])).toEqual([
      ["model-1", "completed", null, []],
      ["model-1/call_1", "completed", "model-1", []],
      ["model-1/call_2", "completed", "model-1", []],
      ["model-2", "completed", "model-1", ["model-1/call_1", "model-1/call_2"]],
    ]);
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body.messages;
    expect(history.map((message: any) => message.role)).toEqual(["user", "assistant", "tool", "tool", "assistant"]);
    await h.expectNoViolations();
  });
});
