/**
 * Provider faults while a run streams (issue 17, item 3): whatever the upstream does (a stream of
 * garbage, a reset mid-answer, a 5xx or a reset on every attempt, a stream that stalls with its
 * connection open), the run ends in a defined status: `failed {provider_error}` once the model's
 * retries are spent (or `completed` when a retry got through), never stuck, nothing
 * half-published, no upstream request left open, and the store's invariants hold.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { createOpenAICompatibleModel, fromAISDKModel, withIdleTimeout, withRetries } from "../src/models/index.js";
import type { ChatModel } from "../src/runtime/index.js";
import { startTestProvider, type TestProvider, type TestProviderScenario } from "../src/testing/index.js";
import { startHarness, type Harness } from "./support/harness.js";

/** A stall is a stream that sends nothing for this long (the default is 5 minutes). */
const IDLE_TIMEOUT_MS = 300;

const MODEL_PATHS = [
  ["the lean OpenAI-compatible reader", (provider: TestProvider): ChatModel => createOpenAICompatibleModel({ model: "test", baseURL: provider.url })],
  [
    "the AI SDK's openai-compatible provider",
    (provider: TestProvider): ChatModel => fromAISDKModel(createOpenAICompatible({ name: "test-provider", baseURL: provider.url, includeUsage: true }).chatModel("test")),
  ],
] as const;

const FAULTS: [string, TestProviderScenario, { status: string; failure_reason: string | null }][] = [
  ["a 200 whose stream is not JSON", { failWith: { status: 200, body: "data: {this is not json\n\n" } }, { status: "failed", failure_reason: "provider_error" }],
  ["a 200 whose body is not a stream at all", { failWith: { status: 200, body: "<html>bad gateway</html>" } }, { status: "failed", failure_reason: "provider_error" }],
  ["a reset mid-answer", { chunks: 50, intervalMs: 0, failMidStream: { afterChunks: 5 } }, { status: "failed", failure_reason: "provider_error" }],
  ["HTTP 500 on every attempt", { failWith: { status: 500 } }, { status: "failed", failure_reason: "provider_error" }],
  ["a reset before the first chunk on every attempt", { resetBeforeFirstChunk: {} }, { status: "failed", failure_reason: "provider_error" }],
  ["a stream that stalls mid-answer (connection open)", { chunks: 20, intervalMs: 0, stallMidStream: { afterChunks: 3 } }, { status: "failed", failure_reason: "provider_error" }],
  ["a stream that stalls before its first chunk, on every attempt", { chunks: 5, intervalMs: 0, stallMidStream: { afterChunks: 0 } }, { status: "failed", failure_reason: "provider_error" }],
  ["HTTP 503 twice, then an answer", { chunks: 5, intervalMs: 0, failWith: { status: 503, times: 2, retryAfterSeconds: 0 } }, { status: "completed", failure_reason: null }],
];

describe.each(MODEL_PATHS)("provider faults while a run streams end it in a defined status, through %s", (_name, makeModel) => {
  let provider: TestProvider;
  let h: Harness;
  beforeAll(async () => {
    provider = await startTestProvider({ scenario: { chunks: 5, intervalMs: 0 } });
    h = await startHarness({ model: withRetries(withIdleTimeout(makeModel(provider), { idleTimeoutMs: IDLE_TIMEOUT_MS }), { baseDelayMs: 5 }) });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
    await provider.close();
  });

  it.each(FAULTS)("%s", async (_name, scenario, expected) => {
    provider.setScenario(scenario);
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "hello");
    const events = await h.events(run.run_id);
    const final = (await h.api(`/v1/runs/${run.run_id}`)).body;
    expect(final).toMatchObject(expected);
    expect(events.at(-1)).toMatchObject({ type: `run.${expected.status}` });
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(history.messages).toHaveLength(expected.status === "completed" ? 2 : 1);
    expect((await h.api(`/v1/threads/${threadId}`)).body).toMatchObject({ status: "idle", active_run_id: null });
    // No upstream request is left open (a stalled one was closed by the idle timeout).
    for (const request of provider.requests) await request.closed;
  });
});
