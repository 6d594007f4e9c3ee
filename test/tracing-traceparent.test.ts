/**
 * A run created with a W3C `traceparent` header (issue 17, item 5) has its `tidemark.run` span as a
 * child of the caller's span, in the caller's trace, on the native API and the compatibility
 * layers; without the header, or with a malformed one, the run span is a root. Read from the SDK's
 * in-memory exporter, with the SDK's W3C propagator registered as an application would.
 */
import { propagation, trace } from "@opentelemetry/api";
// The SDK's own propagator (a dependency of sdk-trace-base, at the same version).
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.js";
import { startHarness, type Harness } from "./support/harness.js";

const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN_ID = "00f067aa0ba902b7";
const TRACEPARENT = `00-${TRACE_ID}-${PARENT_SPAN_ID}-01`;

describe("traceparent: the run's span continues the caller's trace", () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let h: Harness;

  beforeAll(async () => {
    trace.setGlobalTracerProvider(provider);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    h = await startHarness();
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    trace.disable();
    propagation.disable();
    await provider.shutdown();
  });

  /** The run's span, once the run ended (it ends with the execution). */
  const runSpanOf = (runId: string): Promise<ReadableSpan> =>
    eventually(
      () => {
        const span = exporter.getFinishedSpans().find((candidate) => candidate.name === "tidemark.run" && candidate.attributes["tidemark.run_id"] === runId);
        if (!span) throw new Error(`no finished run span for ${runId}`);
        return span;
      },
      { what: `the run span of ${runId}` },
    );

  const startRun = async (headers: Record<string, string>): Promise<string> => {
    const threadId = await h.createThread();
    const created = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", headers, json: { input: { role: "user", content: "Hello" } } });
    expect(created.status).toBe(201);
    const runId = created.body.run_id as string;
    expect((await h.events(runId)).at(-1)?.type).toBe("run.completed");
    return runId;
  };

  it("a run created with a traceparent has its span in that trace, as a child of the caller's span; its steps nest under it", async () => {
    const runId = await startRun({ traceparent: TRACEPARENT, tracestate: "vendor=opaque" });
    const span = await runSpanOf(runId);
    expect(span.spanContext().traceId).toBe(TRACE_ID);
    expect(span.parentSpanContext?.spanId).toBe(PARENT_SPAN_ID);
    expect(span.parentSpanContext?.isRemote).toBe(true);
    expect(span.spanContext().traceState?.get("vendor")).toBe("opaque");
    const step = exporter.getFinishedSpans().find((candidate) => candidate.name === "tidemark.step" && candidate.attributes["tidemark.run_id"] === runId);
    expect(step?.spanContext().traceId).toBe(TRACE_ID);
    expect(step?.parentSpanContext?.spanId).toBe(span.spanContext().spanId);
  });

  it("without the header, or with a malformed one, the run's span is a root of a trace of its own", async () => {
    const cases: Record<string, string>[] = [{}, { traceparent: "00-not-a-trace-01" }, { traceparent: `00-${"0".repeat(32)}-${PARENT_SPAN_ID}-01` }];
    for (const headers of cases) {
      const runId = await startRun(headers);
      const span = await runSpanOf(runId);
      expect(span.parentSpanContext).toBeUndefined();
      expect(span.spanContext().traceId).not.toBe(TRACE_ID);
    }
  });

  it("a run created through the OpenAI layer takes the caller's trace too", async () => {
    const created = await h.api("/v1/responses", { method: "POST", headers: { traceparent: TRACEPARENT }, json: { model: "chat", input: "Hello", background: true } });
    expect(created.status).toBe(200);
    const runSpan = await eventually(
      () => {
        const span = exporter.getFinishedSpans().find((candidate) => candidate.name === "tidemark.run");
        if (!span) throw new Error("no finished run span");
        return span;
      },
      { what: "the OpenAI run's span" },
    );
    expect(runSpan.spanContext().traceId).toBe(TRACE_ID);
    expect(runSpan.parentSpanContext?.spanId).toBe(PARENT_SPAN_ID);
  });
});
