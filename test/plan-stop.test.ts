/**
 * The Stop of a plan (issue 14, DESIGN §11), against a provider in a process of its own: a
 * `research` run with 50 subtasks and 8 in flight is stopped by an HTTP request. Every in-flight
 * upstream socket closes, one explicit cancel call per request token arrives, all of them at once
 * (the provider answers none until all 8 are open, and answers 499: a cancellation, not an error),
 * no request starts afterwards, finished sections stay, and a Continue asks the model only for what
 * was left (plus the synthesis). The same on the scaled deployment, with the Stop sent to an API
 * process while a worker process holds the run.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { createOpenAICompatibleModel } from "../src/models/index.js";
import { startHarness, type Harness } from "./support/harness.js";
import { startCluster, readEvents, type TestCluster } from "./support/cluster.js";
import { startProviderProcess, type ProviderProcess, type ProviderSnapshot } from "./support/provider-process.js";

const SUBTASKS = Array.from({ length: 50 }, (_, i) => `Subtask number ${i + 1}`);
const IN_FLIGHT = 8;
/** Sections that finish before the long ones start. */
const FINISHED_FIRST = 10;
const SHORT = { chunks: 2, intervalMs: 1 } as const;
/** Long enough that the Stop always catches all eight in flight. */
const LONG = { chunks: 100_000, intervalMs: 5, holdCancelRepliesUntil: IN_FLIGHT, cancelAnswers499: true } as const;

/** One deployment under test: where to send requests, and its `tidemark check`. */
interface Deployment {
  url: string;
  events(runId: string, until: (event: RunEvent) => boolean): Promise<RunEvent[]>;
  expectNoViolations(): Promise<void>;
}

async function call(base: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

const now = (): number => performance.timeOrigin + performance.now();

/** Steps of a run by id. */
async function stepsOf(base: string, runId: string): Promise<Map<string, any>> {
  const { status, body } = await call(base, `/v1/runs/${runId}/steps`);
  expect(status).toBe(200);
  return new Map(body.steps.map((step: any) => [step.step_id, step]));
}

/** The requests of section steps (each asks for one part; the synthesis names them all, but no part). */
function sectionRequests(snapshot: ProviderSnapshot) {
  return snapshot.requests.filter((request) => /This part: Subtask number \d+/.test(request.messages));
}

async function stopAndContinue(deployment: Deployment, provider: ProviderProcess): Promise<void> {
  const base = deployment.url;
  await provider.setScenario(SHORT);
  const thread = await call(base, "/v1/threads", {});
  const created = await call(base, `/v1/threads/${thread.body.thread_id}/runs`, {
    input: { role: "user", content: "Research everything about plan stops" },
    agent: "research",
    config: { subtasks: SUBTASKS, max_parallel: IN_FLIGHT },
  });
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({ agent: "research", config: { subtasks: SUBTASKS, max_parallel: IN_FLIGHT } });
  const runId: string = created.body.run_id;

  // Let some sections finish, then make every later one long.
  await deployment.events(runId, countCompleted(FINISHED_FIRST));
  // Numbered at the switch itself: a request counted as long is one that got the long scenario.
  const switchedAt = await provider.setScenario(LONG);
  const open = await provider.waitForOpen(IN_FLIGHT, switchedAt);
  const inFlight = open.requests.filter((request) => request.id > switchedAt && request.socketClosedAt === undefined);
  expect(inFlight).toHaveLength(IN_FLIGHT);

  const stoppedAt = now();
  const cancel = await call(base, `/v1/runs/${runId}/cancel`, { reason: "user_pressed_stop" });
  expect(cancel.status).toBe(202);
  const events = await deployment.events(runId, (event) => event.type === "run.cancelled" || event.type === "run.failed");
  expect(events.at(-1)?.type).toBe("run.cancelled");
  const quiet = await provider.waitForQuiet(IN_FLIGHT);

  // Every in-flight upstream socket closed, each with exactly one cancel call, and nothing started after the Stop.
  for (const request of inFlight) {
    const after = quiet.requests.find((candidate) => candidate.id === request.id)!;
    expect(after.socketClosedAt).toBeDefined();
    expect(after.cancelCalls).toBe(1);
  }
  expect(quiet.cancels.map((entry) => entry.token).sort()).toEqual(inFlight.map((request) => request.token).sort());
  expect(quiet.requests.filter((request) => request.startedAt > stoppedAt)).toEqual([]);
  // Nothing the user could see arrived after the cancel was accepted.
  const acceptedAt = events.findIndex((event) => event.type === "run.cancel_requested");
  expect(events.slice(acceptedAt).filter((event) => event.type === "message.delta" || event.type === "message.published")).toEqual([]);

  const steps = await stepsOf(base, runId);
  const sections = SUBTASKS.map((_, i) => steps.get(`subtask-${i + 1}`));
  const completed = sections.filter((step) => step.status === "completed");
  expect(completed.length).toBeGreaterThanOrEqual(FINISHED_FIRST);
  for (const step of completed) expect(step.message_id).toMatch(/^msg_/);
  for (const step of sections.filter((step) => step.status !== "completed")) {
    expect(step.status).toBe("cancelled");
    expect(step.checkpoint_id).toBeNull();
  }
  expect(sections.filter((step) => step.status === "cancelled" && step.started_at === null).length).toBe(SUBTASKS.length - completed.length - IN_FLIGHT);
  expect(steps.get("synthesis")).toMatchObject({ status: "cancelled", started_at: null });
  // The finished sections are labelled blocks of the thread's history.
  const history = await call(base, `/v1/threads/${thread.body.thread_id}/history`);
  const labelled = history.body.messages.filter((message: any) => message.label !== null);
  expect(labelled.map((message: any) => message.message_id).sort()).toEqual(completed.map((step) => step.message_id).sort());

  // Continue: only the unfinished sections and the synthesis ask the model; the plan and the finished sections are reused.
  await provider.setScenario(SHORT);
  const before = sectionRequests(await provider.snapshot()).length;
  const allBefore = (await provider.snapshot()).requests.length;
  const resumed = await call(base, `/v1/threads/${thread.body.thread_id}/runs`, {
    resume_from_checkpoint_id: cancel.body.resume_checkpoint_id,
    expected_state_version: cancel.body.accepted_state_version,
  });
  expect(resumed.status).toBe(201);
  expect(resumed.body.agent).toBe("research");
  const resumedEvents = await deployment.events(resumed.body.run_id, (event) => event.type.startsWith("run.") && ["run.completed", "run.cancelled", "run.failed"].includes(event.type));
  expect(resumedEvents.at(-1)?.type).toBe("run.completed");
  const after = await provider.snapshot();
  const unfinished = SUBTASKS.length - completed.length;
  expect(sectionRequests(after).length - before).toBe(unfinished);
  // Every new request: the unfinished sections, then the synthesis (whose prompt names every subtask).
  expect(after.requests.length - allBefore).toBe(unfinished + 1);
  const resumedSteps = await stepsOf(base, resumed.body.run_id);
  expect([...resumedSteps.values()].filter((step) => step.status !== "completed")).toEqual([]);
  expect(resumedSteps.get("plan").reused_from_run_id).toBe(runId);
  for (const step of completed) expect(resumedSteps.get(step.step_id)).toMatchObject({ reused_from_run_id: runId, message_id: step.message_id });
  await deployment.expectNoViolations();
}

/** An `until` that holds once `count` section steps completed. */
function countCompleted(count: number): (event: RunEvent) => boolean {
  let completed = 0;
  return (event) => {
    if (event.type === "step.updated" && event.status === "completed" && event.step_id.startsWith("subtask-")) completed += 1;
    return completed >= count;
  };
}

describe("the Stop of a plan (embedded, SQLite)", () => {
  let provider: ProviderProcess;
  let harness: Harness;
  beforeAll(async () => {
    provider = await startProviderProcess(SHORT);
    harness = await startHarness({
      model: createOpenAICompatibleModel({ model: "test", baseURL: provider.url, cancel: { url: provider.cancelUrl } }),
    });
  });
  afterAll(async () => {
    await harness?.close();
    await provider?.close();
  });

  it("cuts all 8 sections in flight at once, keeps the finished ones, and a Continue runs only the rest", async () => {
    await stopAndContinue(
      {
        url: harness.url,
        events: (runId, until) => harness.events(runId, { until }),
        expectNoViolations: () => harness.expectNoViolations(),
      },
      provider,
    );
  });
});

describe("the Stop of a plan (scaled: API and worker processes on PostgreSQL)", () => {
  let provider: ProviderProcess;
  let cluster: TestCluster;
  beforeAll(async () => {
    provider = await startProviderProcess(SHORT);
    cluster = await startCluster({
      env: {
        TIDEMARK_MODEL: "openai-compatible:test",
        TIDEMARK_OPENAI_BASE_URL: provider.url,
        TIDEMARK_PROVIDER_CANCEL_URL: provider.cancelUrl,
      },
    });
  });
  afterAll(async () => {
    await cluster?.stop();
    await provider?.close();
  });

  it("a Stop on an API process reaches the worker holding the run with the same result", async () => {
    await stopAndContinue(
      {
        url: cluster.apiA.url,
        events: (runId, until) => readEvents(cluster.apiA.url, runId, { until, timeoutMs: 60_000 }),
        expectNoViolations: async () => {
          const result = await cluster.check();
          expect(result.stdout, result.stderr).toMatch(/^0 violations/m);
          expect(result.code).toBe(0);
        },
      },
      provider,
    );
  });
});
