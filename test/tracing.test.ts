/**
 * Operators can see it (issue 17, item 5): the runtime's OpenTelemetry spans, read from the SDK's
 * in-memory exporter: a completed run, a run with a tool call and a Stopped run, each as a tree
 * (names, parents, key attributes, the cancel's timeline in order), with no message text or tool
 * input in any attribute; and without an SDK nothing breaks. Each case closes its runtime before
 * reading, so every span has ended (close waits for the runs' executions).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createId } from "../src/core/index.js";
import { createDemoModel, createRuntime, ModelError, type ChatModel, type Runtime } from "../src/runtime/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import type { Store } from "../src/store/index.js";
import { defineTool } from "../src/tools/index.js";
import { createHeldModel } from "./support/held-model.js";

const TENANT = "local";
/** Text that must never reach a span: the user's message and a tool's input. */
const SECRET_INPUT = "my-private-question";
const SECRET_RECIPIENT = "private-recipient";

/** A model that asks for `send` once, then answers in words. */
const sendingModel: ChatModel = {
  id: "sender",
  async *stream(request) {
    if (!request.messages.some((message) => message.role === "tool")) {
      yield { type: "tool-call", toolCall: { toolCallId: "call-1", toolName: "send", input: JSON.stringify({ to: SECRET_RECIPIENT }) } };
    } else {
      yield { type: "text-delta", text: "Sent." };
    }
    yield { type: "finish", finishReason: "stop" };
  },
};

const send = defineTool({
  name: "send",
  description: "Sends a message.",
  effect: "consequential",
  approval: "never",
  input: z.object({ to: z.string() }),
  idempotencyKey: (input) => `send:${input.to}`,
  commit: async () => ({ sent: true }),
});

describe("OpenTelemetry spans", () => {
  const dir = mkdtempSync(join(tmpdir(), "tidemark-tracing-"));
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let store: Store | undefined;
  let runtime: Runtime | undefined;
  let files = 0;

  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
  });
  afterEach(async () => {
    await runtime?.close();
    await store?.close();
    runtime = undefined;
    store = undefined;
    exporter.reset();
  });
  afterAll(async () => {
    trace.disable();
    await provider.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(options: { model: ChatModel; tools?: Parameters<typeof createRuntime>[0]["tools"] }) {
    store = createSqliteStore({ path: join(dir, `run-${files++}.db`) });
    runtime = createRuntime({ store, ...options });
    await runtime.start();
    const thread = await runtime.createThread(TENANT);
    const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: `hold ${SECRET_INPUT}` } });
    return { runtime, run, threadId: thread.threadId };
  }

  /** Closes the runtime (every run's span has ended then) and returns what was exported. */
  async function finishedSpans(): Promise<ReadableSpan[]> {
    await runtime?.close();
    return exporter.getFinishedSpans();
  }

  const named = (spans: ReadableSpan[], name: string) => spans.filter((span) => span.name === name);
  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
  const idOf = (span: ReadableSpan) => span.spanContext().spanId;

  function expectNoText(spans: ReadableSpan[]): void {
    const written = JSON.stringify(spans.map((span) => [span.attributes, span.events.map((event) => event.attributes)]));
    expect(written).not.toContain(SECRET_INPUT);
    expect(written).not.toContain(SECRET_RECIPIENT);
  }

  it("a completed run: run → step → model request, with its ids and final status", async () => {
    const { run, threadId } = await start({ model: createDemoModel({ wordsPerSecond: 0, wordCount: 5 }) });
    await runtime!.waitForTerminal(TENANT, run.runId, 10_000);
    const spans = await finishedSpans();

    const [runSpan] = named(spans, "tidemark.run");
    expect(named(spans, "tidemark.run")).toHaveLength(1);
    expect(parentOf(runSpan!)).toBeUndefined();
    expect(runSpan!.attributes).toMatchObject({
      "tidemark.run_id": run.runId,
      "tidemark.thread_id": threadId,
      "tidemark.tenant_id": TENANT,
      "tidemark.agent": "chat",
      "tidemark.attempt": 1,
      "tidemark.status": "completed",
      "tidemark.outcome": "completed",
    });
    const steps = named(spans, "tidemark.step");
    expect(steps.length).toBeGreaterThan(0);
    for (const step of steps) expect(parentOf(step)).toBe(idOf(runSpan!));
    const [request] = named(spans, "tidemark.model_request");
    expect(steps.map(idOf)).toContain(parentOf(request!));
    expect(request!.attributes).toMatchObject({ "tidemark.run_id": run.runId, "tidemark.model": "demo", "tidemark.model_request.aborted": false });
    expect(request!.attributes["tidemark.model_request.chars"]).toBeGreaterThan(0);
    expect(request!.attributes["tidemark.model_request.chunks"]).toBeGreaterThan(0);
    expect(named(spans, "tidemark.drain")).toHaveLength(1);
    expectNoText(spans);
  });

  it("a run with a tool call: the call under its step, with the tool, its operation and phase", async () => {
    const { run } = await start({ model: sendingModel, tools: [send] });
    await runtime!.waitForTerminal(TENANT, run.runId, 10_000);
    const spans = await finishedSpans();

    const [runSpan] = named(spans, "tidemark.run");
    expect(runSpan!.attributes["tidemark.status"]).toBe("completed");
    const [call] = named(spans, "tidemark.tool_call");
    expect(named(spans, "tidemark.tool_call")).toHaveLength(1);
    expect(call!.attributes).toMatchObject({
      "tidemark.run_id": run.runId,
      "tidemark.tool": "send",
      "tidemark.tool_call_id": "call-1",
      "tidemark.tool.effect": "consequential",
      "tidemark.op.phase": "committed",
      "tidemark.tool.is_error": false,
    });
    expect(call!.attributes["tidemark.op_id"]).toMatch(/^op_/);
    expect(call!.events.map((event) => event.name)).toEqual(["operation.prepared", "operation.committing", "operation.committed"]);
    // The call's step nests under the model step that asked for it, and so on up to the run.
    const ancestors: string[] = [];
    for (let span = spans.find((each) => idOf(each) === parentOf(call!)); span; span = spans.find((each) => idOf(each) === parentOf(span!))) {
      ancestors.push(span.name);
    }
    expect(ancestors.at(-1)).toBe("tidemark.run");
    expect(new Set(ancestors.slice(0, -1))).toEqual(new Set(["tidemark.step"]));
    expect(named(spans, "tidemark.model_request").length).toBeGreaterThanOrEqual(2);
    expectNoText(spans);
  });

  it("a Stopped run: the cancel under the run, received → aborted → recorded → terminal", async () => {
    const held = createHeldModel();
    const { run } = await start({ model: held.model });
    await held.whenHeld();
    const cancel = await runtime!.cancelRun(TENANT, run.runId, "user_requested");
    expect(cancel.kind).toBe("accepted");
    await runtime!.waitForTerminal(TENANT, run.runId, 10_000);
    const spans = await finishedSpans();

    const [runSpan] = named(spans, "tidemark.run");
    expect(runSpan!.attributes).toMatchObject({ "tidemark.status": "cancelled", "tidemark.outcome": "cancelled" });
    const [cancelSpan] = named(spans, "tidemark.cancel");
    expect(named(spans, "tidemark.cancel")).toHaveLength(1);
    expect(parentOf(cancelSpan!)).toBe(idOf(runSpan!));
    expect(cancelSpan!.attributes).toMatchObject({
      "tidemark.run_id": run.runId,
      "tidemark.cancel.reason": "user_requested",
      "tidemark.cancel.result": "accepted",
    });
    const timeline = cancelSpan!.events;
    expect(timeline.map((event) => event.name)).toEqual(["cancel.received", "cancel.aborted", "cancel.recorded", "cancel.terminal"]);
    const elapsed = timeline.map((event) => event.attributes?.elapsed_ms as number);
    expect([...elapsed].sort((a, b) => a - b)).toEqual(elapsed);
    expect(timeline.at(-1)!.attributes).toMatchObject({ "tidemark.status": "cancelled" });
    const [request] = named(spans, "tidemark.model_request");
    expect(request!.attributes["tidemark.model_request.aborted"]).toBe(true);
    const [step] = named(spans, "tidemark.step");
    expect(step!.attributes["tidemark.step.status"]).toBe("cancelled");
    expectNoText(spans);
  });

  it("a provider failure: the request and the run have status ERROR, with the model error's kind", async () => {
    const failing: ChatModel = {
      id: "failing",
      async *stream() {
        throw new ModelError("rejected", "The model provider answered HTTP 401 (the API key is missing or was refused).", { status: 401 });
      },
    };
    const { run } = await start({ model: failing });
    expect((await runtime!.waitForTerminal(TENANT, run.runId, 10_000))?.status).toBe("failed");
    const spans = await finishedSpans();

    const [request] = named(spans, "tidemark.model_request");
    expect(request!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: expect.stringContaining("HTTP 401") });
    expect(request!.attributes).toMatchObject({ "tidemark.error.kind": "rejected", "tidemark.error.status": 401, "tidemark.model_request.aborted": false });
    const [runSpan] = named(spans, "tidemark.run");
    expect(runSpan!.status.code).toBe(SpanStatusCode.ERROR);
    expect(runSpan!.attributes).toMatchObject({ "tidemark.status": "failed", "tidemark.failure_reason": "provider_error" });
  });

  it("a recovery: one span per lost run acted on, with its action", async () => {
    store = createSqliteStore({ path: join(dir, `run-${files++}.db`) });
    const now = Date.now();
    const thread = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now });
    const created = await store.createRun({
      tenantId: TENANT,
      runId: createId("run"),
      threadId: thread.threadId,
      input: { role: "user", content: SECRET_INPUT },
      inputMessageId: createId("msg"),
      checkpointId: createId("cp"),
      idempotencyKey: null,
      requestHash: "lost",
      model: "test",
      onDisconnect: "continue",
      recoveryPolicy: "fail",
      expectedStateVersion: null,
      now,
    });
    if (created.kind !== "created") throw new Error(created.kind);
    // Claimed by a worker that died at once: its lease has lapsed.
    await store.claimRun({ tenantId: TENANT, runId: created.run.runId, owner: "wrk_gone", leaseExpiresAt: now - 1, now: now - 1_000 });
    runtime = createRuntime({ store, model: createDemoModel({ wordsPerSecond: 0, wordCount: 5 }) });
    expect(await runtime.recover()).toBe(1);
    const spans = await finishedSpans();

    const [recovery] = named(spans, "tidemark.recovery");
    expect(named(spans, "tidemark.recovery")).toHaveLength(1);
    expect(recovery!.attributes).toMatchObject({
      "tidemark.run_id": created.run.runId,
      "tidemark.thread_id": thread.threadId,
      "tidemark.tenant_id": TENANT,
      "tidemark.status": "running",
      "tidemark.recovery.action": "fail",
      "tidemark.recovery.acted": true,
    });
    expectNoText(spans);
  });

  it("without an SDK, runs complete and stop as before, and nothing is recorded", async () => {
    trace.disable();
    try {
      const held = createHeldModel();
      const { run } = await start({ model: held.model });
      await held.whenHeld();
      await runtime!.cancelRun(TENANT, run.runId, "user_requested");
      const stopped = await runtime!.waitForTerminal(TENANT, run.runId, 10_000);
      expect(stopped?.status).toBe("cancelled");
      const thread = await runtime!.createThread(TENANT);
      const { run: next } = await runtime!.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: "hello" } });
      expect((await runtime!.waitForTerminal(TENANT, next.runId, 10_000))?.status).toBe("completed");
      expect(await finishedSpans()).toEqual([]);
    } finally {
      trace.setGlobalTracerProvider(provider);
    }
  });
});
