/**
 * A plan agent in the web app, in chromium against a real server: choose `research` with twelve
 * subtasks, three at a time; watch the steps run; Stop while some sections are finished and some
 * are being written; the plan view then tells the completed steps (their sections stay in the
 * conversation) from the ones cut in progress and the ones that never began, exactly as
 * `GET /v1/runs/{id}/steps` does. Continue runs only the unfinished steps (the model is asked for
 * nothing else), marks the kept ones, and the run completes with the answer. On a phone, a
 * stopped plan opened afresh reads the same. Skipped only when /usr/bin/chromium is missing.
 */
import type { Locator, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyPlan, type PlanState, type PlanStep } from "../src/client/index.js";
import type { ChatModel } from "../src/runtime/index.js";
import { createDemoModel } from "../src/runtime/index.js";
import { DEFAULT_WEB_ROOT } from "../src/server/index.js";
import { buildConfig, configFields } from "../web/src/agent-config.js";
import { planSummary, stepOutcome, stepTree } from "../web/src/plan-outline.js";
import { CHROMIUM, collectPageErrors, hasChromium, launchBrowser, PHONE, requireBuiltWebApp, screenshotPath, type TestBrowser } from "./support/browser.js";
import { startHarness, type Harness } from "./support/harness.js";

if (!hasChromium) console.warn(`web-e2e-plan: skipped, ${CHROMIUM} is missing (apt-get install chromium to run it).`);

const WAIT = { timeout: 20_000 };
const SUBTASKS = Array.from({ length: 12 }, (_, index) => `Tide fact ${index + 1}`);

/** The demo model, recording what each call was asked: a subtask's part, or the synthesis. */
function createRecordingModel() {
  const demo = createDemoModel({ wordsPerSecond: 40, wordCount: 60 });
  const asked: string[] = [];
  const model: ChatModel = {
    id: demo.id,
    stream(request, options) {
      const system = request.messages.find((message) => message.role === "system")?.content ?? "";
      const user = request.messages.findLast((message) => message.role === "user")?.content ?? "";
      asked.push(system.startsWith("You research one part") ? (/\n\nThis part: (.*)$/.exec(user)?.[1] ?? user) : "synthesis");
      return demo.stream(request, options);
    },
    title: demo.title!.bind(demo),
  };
  return { model, asked };
}

interface StepRow {
  step_id: string;
  status: string;
  started_at: string | null;
  checkpoint_id: string | null;
  reused_from_run_id: string | null;
}

/** The outcome the plan view must show for a row of `GET /v1/runs/{id}/steps`. */
function expectedOutcome(row: StepRow): string {
  if (row.status === "completed") return row.reused_from_run_id ? "reused" : "completed";
  if (row.status !== "cancelled") return row.status;
  if (row.started_at === null) return "never_started";
  return row.checkpoint_id === null ? "cut" : "stopped_waiting";
}

/** What the plan view shows: step id → outcome. */
async function shownOutcomes(plan: Locator): Promise<Record<string, string>> {
  const steps = await plan.locator(".plan-step").evaluateAll((items) => items.map((item) => [item.getAttribute("data-step-id"), item.getAttribute("data-outcome")]));
  return Object.fromEntries(steps);
}

const isSubtask = (stepId: string): boolean => stepId.startsWith("subtask-");
const count = (page: Page, outcome: string) => page.locator(`.plan-step[data-outcome="${outcome}"]`).count();

describe.skipIf(!hasChromium)("the web app in chromium: a research plan, Stop, Continue", () => {
  let h: Harness;
  let browser: TestBrowser;
  const recording = createRecordingModel();
  const pageErrors: string[] = [];

  beforeAll(async () => {
    requireBuiltWebApp();
    h = await startHarness({ webRoot: DEFAULT_WEB_ROOT, model: recording.model });
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (h) {
      await h.expectNoViolations();
      await h.close();
    }
  });

  async function steps(runId: string): Promise<StepRow[]> {
    const { status, body } = await h.api(`/v1/runs/${runId}/steps`);
    expect(status).toBe(200);
    return body.steps as StepRow[];
  }

  it("shows the steps live, what a Stop kept, cut and never began, and a Continue that runs only the rest", async () => {
    const page = await browser.context.newPage();
    collectPageErrors(page, pageErrors);
    await page.goto(`${h.url}/`);

    // Choose the agent and its settings next to the message field.
    await page.getByLabel("Agent", { exact: true }).selectOption("research");
    await page.getByLabel("Subtasks (one per line, optional)").fill(SUBTASKS.join("\n"));
    await page.getByLabel("Max parallel").fill("3");
    const composer = page.getByRole("textbox", { name: "Message" });
    await composer.fill("Tell me about the tides");
    await composer.press("Enter");
    await page.waitForURL(/\/threads\/thr_[0-9a-z]+$/, WAIT);
    const threadId = new URL(page.url()).pathname.split("/").at(-1)!;

    // The plan runs: wait until some sections are finished while others are being written.
    const plan = page.locator("section.plan");
    await expect.poll(() => plan.getAttribute("data-phase"), WAIT).toBe("running");
    await expect.poll(() => count(page, "completed"), WAIT).toBeGreaterThanOrEqual(1);
    expect(await count(page, "in_progress")).toBeGreaterThanOrEqual(1);
    expect(await count(page, "in_progress")).toBeLessThanOrEqual(3);
    const stoppedRunId = (await plan.getAttribute("data-run-id"))!;
    expect(stoppedRunId).toMatch(/^run_/);

    await page.getByRole("button", { name: "Stop", exact: true }).click();
    await expect.poll(() => plan.getAttribute("data-phase"), WAIT).toBe("stopped");
    await page.getByRole("heading", { name: "Stopped" }).waitFor(WAIT);

    // The plan view says what the server's rows say, step by step (they are read at the run's end).
    const stoppedRows = await steps(stoppedRunId);
    const expectedAfterStop = Object.fromEntries(stoppedRows.map((row) => [row.step_id, expectedOutcome(row)]));
    await expect.poll(() => shownOutcomes(plan), WAIT).toEqual(expectedAfterStop);
    const subtaskOutcomes = Object.entries(expectedAfterStop).filter(([stepId]) => isSubtask(stepId));
    const kept = subtaskOutcomes.filter(([, outcome]) => outcome === "completed").map(([stepId]) => stepId);
    const unfinished = subtaskOutcomes.filter(([, outcome]) => outcome !== "completed").map(([stepId]) => stepId);
    expect(kept.length).toBeGreaterThanOrEqual(1);
    expect(subtaskOutcomes.filter(([, outcome]) => outcome === "cut").length).toBeGreaterThanOrEqual(1);
    expect(subtaskOutcomes.filter(([, outcome]) => outcome === "never_started").length).toBeGreaterThanOrEqual(1);
    expect(expectedAfterStop.synthesis).toBe("never_started");
    // Every outcome is said in words, not only by colour.
    await expect.poll(() => plan.locator('.plan-step[data-outcome="cut"] .step-badge').first().textContent()).toBe("Cancelled · cut by the Stop");
    await expect.poll(() => plan.locator('.plan-step[data-outcome="never_started"] .step-badge').first().textContent()).toBe("Cancelled · never started");
    await expect.poll(() => plan.locator(".plan-summary").textContent()).toMatch(/^Stopped: \d+ completed and kept, \d+ cut while in progress, \d+ never started\./);

    // The kept sections are in the conversation as finished, labelled sections; nothing cut is shown as text.
    const sections = page.locator(".message.section");
    await expect.poll(() => sections.evaluateAll((items) => items.map((item) => item.getAttribute("data-label")))).toEqual(
      kept.map((stepId) => `${stepId.slice("subtask-".length)}. ${SUBTASKS[Number(stepId.slice("subtask-".length)) - 1]}`),
    );
    expect(await sections.first().getByRole("heading").textContent()).toBe(`1. ${SUBTASKS[0]}`);
    expect(await sections.first().locator(".message-text").textContent()).toContain("This is the Tidemark demo model");
    expect(await page.locator(".message.draft").count()).toBe(0);
    await plan.scrollIntoViewIfNeeded();
    await page.screenshot({ path: screenshotPath("web-plan-stop.png", browser.scratch) });
    // "Read" takes the reader to a kept step's section.
    await plan.getByRole("button", { name: `Read the section: ${SUBTASKS[0]}` }).click();
    await expect.poll(() => sections.first().evaluate((element) => element === document.activeElement)).toBe(true);

    // Continue: only the unfinished steps run; the kept ones are marked, and the run completes with the answer.
    const askedBefore = recording.asked.length;
    await page.getByRole("button", { name: "Continue from the saved point" }).click();
    await expect.poll(() => plan.getAttribute("data-run-id"), WAIT).not.toBe(stoppedRunId);
    const continuedRunId = (await plan.getAttribute("data-run-id"))!;
    await expect.poll(() => plan.getAttribute("data-phase"), { timeout: 30_000 }).toBe("completed");
    const run = await h.api(`/v1/runs/${continuedRunId}`);
    expect([run.body.status, run.body.agent]).toEqual(["completed", "research"]);

    const continuedRows = await steps(continuedRunId);
    // Reused: every step whose own work the stopped run checkpointed (the kept sections, and the plan itself).
    const checkpointed = stoppedRows.filter((row) => row.checkpoint_id !== null).map((row) => row.step_id);
    expect(checkpointed).toEqual(["plan", ...kept]);
    const reused = continuedRows.filter((row) => row.reused_from_run_id !== null);
    expect(reused.map((row) => row.step_id)).toEqual(checkpointed);
    expect(new Set(reused.map((row) => row.reused_from_run_id))).toEqual(new Set([stoppedRunId]));
    for (const row of continuedRows) expect(row.status).toBe("completed");
    // The model was asked for the unfinished subtasks and the synthesis, and nothing it had already written.
    expect([...recording.asked.slice(askedBefore)].sort()).toEqual([...unfinished.map((stepId) => SUBTASKS[Number(stepId.slice("subtask-".length)) - 1]!), "synthesis"].sort());

    await expect.poll(() => shownOutcomes(plan), WAIT).toEqual(Object.fromEntries(continuedRows.map((row) => [row.step_id, expectedOutcome(row)])));
    expect(await plan.locator('.plan-step[data-outcome="reused"] .step-badge').first().textContent()).toBe("Completed · kept from the stopped run");

    // All twelve sections are in the conversation once, then the answer, as an ordinary message.
    await expect.poll(() => sections.count()).toBe(SUBTASKS.length);
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    const answer = history.messages.at(-1);
    expect([answer.role, answer.label, answer.run_id]).toEqual(["assistant", null, continuedRunId]);
    const answerItem = page.locator(`.message[data-message-id="${answer.message_id}"]`);
    await expect.poll(() => answerItem.getAttribute("class")).toBe("message assistant");
    expect(await answerItem.locator(".message-text").textContent()).toContain("This is the Tidemark demo model");
    await expect.poll(() => page.locator('p.visually-hidden[role="status"]').textContent()).toBe("The answer is saved.");
    // With the answer there, the steps fold away under their summary; they open again on demand.
    const fold = plan.locator("details");
    expect(await fold.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(false);
    await plan.getByText(/^Completed: \d+ steps; \d+ kept from the stopped run\.$/).click();
    expect(await fold.evaluate((element) => (element as HTMLDetailsElement).open)).toBe(true);
    await page.screenshot({ path: screenshotPath("web-plan.png", browser.scratch) });
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it("on a phone, a stopped plan opened afresh reads the same as the server's rows, and fits the screen", async () => {
    // Stopped through the API: the page learns everything from history and GET …/steps.
    const threadId = await h.createThread();
    const started = await h.startRun(threadId, "Tides on a phone", { agent: "research", config: { subtasks: SUBTASKS.slice(0, 6), max_parallel: 2 } });
    await h.events(started.run_id, { until: (event) => event.type === "step.updated" && event.status === "completed" && isSubtask(event.step_id) });
    expect((await h.api(`/v1/runs/${started.run_id}/cancel?wait=10000`, { method: "POST" })).body.status).toBe("cancelled");
    const rows = await steps(started.run_id);

    const phone = await launchBrowser({ phone: true });
    try {
      const page = await phone.context.newPage();
      collectPageErrors(page, pageErrors);
      await page.goto(`${h.url}/threads/${threadId}`);
      const plan = page.locator("section.plan");
      await expect.poll(() => plan.getAttribute("data-run-id"), WAIT).toBe(started.run_id);
      await expect.poll(() => shownOutcomes(plan), WAIT).toEqual(Object.fromEntries(rows.map((row) => [row.step_id, expectedOutcome(row)])));
      expect(await plan.getAttribute("data-phase")).toBe("stopped");
      // Only the conversation scrolls: not the page, in either direction; the plan fits the width.
      const sizes = await page.evaluate(() => ({ scrollWidth: document.scrollingElement!.scrollWidth, scrollHeight: document.scrollingElement!.scrollHeight }));
      expect(sizes.scrollWidth).toBeLessThanOrEqual(PHONE.width);
      expect(sizes.scrollHeight).toBeLessThanOrEqual(PHONE.height);
      const box = await plan.boundingBox();
      expect(box!.x + box!.width).toBeLessThanOrEqual(PHONE.width);
      const send = page.getByRole("button", { name: "Send" });
      const sendBox = await send.boundingBox();
      expect(sendBox!.y + sendBox!.height).toBeLessThanOrEqual(PHONE.height);
      await page.getByRole("button", { name: "Continue from the saved point" }).waitFor(WAIT);
      await plan.scrollIntoViewIfNeeded();
      await page.screenshot({ path: screenshotPath("web-phone-plan.png", phone.scratch) });
      expect(pageErrors).toEqual([]);
    } finally {
      await phone.close();
    }
  });
});

/** The plan view's words and the agent form, without a browser. */
describe("the plan view's outline and the agent settings form", () => {
  const step = (stepId: string, fields: Partial<PlanStep>): PlanStep => ({
    stepId,
    status: "not_started",
    title: stepId,
    dependsOn: [],
    parentStepId: null,
    hasStarted: false,
    isOwnWorkDone: false,
    isReused: false,
    reusedFromRunId: null,
    checkpointId: null,
    messageId: null,
    error: null,
    ...fields,
  });

  it.each([
    [{ status: "in_progress" }, [], "in_progress"],
    [{ status: "in_progress" }, ["s"], "stopping"],
    [{ status: "children_in_progress", hasStarted: true, isOwnWorkDone: true }, [], "waiting"],
    [{ status: "completed", hasStarted: true }, [], "completed"],
    [{ status: "completed", hasStarted: true, isReused: true }, [], "reused"],
    [{ status: "cancelled", hasStarted: true }, [], "cut"],
    [{ status: "cancelled" }, [], "never_started"],
    [{ status: "cancelled", hasStarted: true, isOwnWorkDone: true }, [], "stopped_waiting"],
    [{ status: "failed", hasStarted: true }, [], "failed"],
  ] as const)("a step %j (finishing %j) is %s", (fields, finishing, outcome) => {
    expect(stepOutcome(step("s", fields), finishing)).toBe(outcome);
  });

  it("nests the steps a step added under it, and sums a stopped plan up in words", () => {
    const plan: PlanState = {
      ...emptyPlan("run_1", "research"),
      steps: [
        step("plan", { status: "cancelled", hasStarted: true, isOwnWorkDone: true }),
        step("subtask-1", { status: "completed", hasStarted: true, parentStepId: "plan" }),
        step("subtask-2", { status: "cancelled", hasStarted: true, parentStepId: "plan" }),
        step("subtask-3", { status: "cancelled", parentStepId: "plan" }),
        step("orphan", { parentStepId: "gone" }),
      ],
    };
    expect(stepTree(plan.steps).map((node) => [node.step.stepId, node.children.map((child) => child.step.stepId)])).toEqual([
      ["plan", ["subtask-1", "subtask-2", "subtask-3"]],
      ["orphan", []],
    ]);
    expect(planSummary(plan, "stopped")).toBe("Stopped: 1 completed and kept, 1 cut while in progress, 1 never started. Continue runs only the steps that did not complete.");
    expect(planSummary(emptyPlan("run_1"), "running")).toBe("Planning…");
  });

  it("offers the research agent's settings from its JSON Schema and builds its config", () => {
    const schema = {
      type: "object",
      properties: {
        subtasks: { type: "array", items: { type: "string" }, minItems: 1, maxItems: 3 },
        max_parallel: { type: "integer", minimum: 1, maximum: 32, default: 4 },
        nested: { type: "object" },
      },
      required: ["max_parallel"],
    };
    const fields = configFields(schema);
    expect(fields.map((field) => [field.name, field.kind, field.label, field.initial, field.isRequired])).toEqual([
      ["subtasks", "lines", "Subtasks", "", false],
      ["max_parallel", "integer", "Max parallel", "4", false],
    ]);
    expect(buildConfig(fields, {})).toEqual({ config: { max_parallel: 4 }, errors: {} });
    expect(buildConfig(fields, { subtasks: " a \n\n b ", max_parallel: "3" })).toEqual({ config: { subtasks: ["a", "b"], max_parallel: 3 }, errors: {} });
    expect(buildConfig(fields, { subtasks: "a\nb\nc\nd", max_parallel: "2.5" }).errors).toEqual({
      subtasks: "Subtasks: at most 3 lines.",
      max_parallel: "Max parallel must be a whole number.",
    });
    expect(buildConfig(fields, { max_parallel: "40" }).errors).toEqual({ max_parallel: "Max parallel must be at most 32." });
  });
});
