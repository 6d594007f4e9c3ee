/**
 * A run that fails says why in `run.failed` (the provider's reason, never a secret or an upstream
 * body), and the server logs each failure once, with its cause, for the operator.
 */
import { createOpenAI } from "@ai-sdk/openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromAISDKModel } from "../src/models/index.js";
import type { Logger } from "../src/runtime/index.js";
import { startHarness, type Harness } from "./support/harness.js";

describe("a run whose model is not set up", () => {
  // Every line, at every level: a failure logged twice (or at another level too) shows here.
  const lines: { level: string; data: Record<string, unknown>; message: string }[] = [];
  const record = (level: string) => (data: Record<string, unknown>, message: string) => lines.push({ level, data, message });
  const logger: Logger = { info: record("info"), warn: record("warn"), error: record("error") };
  let h: Harness;
  const previousKey = process.env.OPENAI_API_KEY;
  beforeAll(async () => {
    delete process.env.OPENAI_API_KEY;
    // A real provider package with no key: it refuses before sending anything.
    const model = fromAISDKModel(createOpenAI({ baseURL: "http://127.0.0.1:9/v1" })("gpt-4o-mini"));
    h = await startHarness({ model, logger });
  });
  afterAll(async () => {
    if (previousKey !== undefined) process.env.OPENAI_API_KEY = previousKey;
    await h.close();
  });

  it("fails with the provider package's reason and is logged once", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "hello");

    const events = await h.events(run.run_id);

    const failed = events.at(-1);
    expect(failed).toMatchObject({ type: "run.failed", reason: "provider_error" });
    expect((failed as { message: string }).message).toMatch(/^The model is not set up: .*API key is missing/);
    // Exactly one line about the run, whatever its level: the failure, with the model error's kind and (safe) message.
    const aboutRun = lines.filter((line) => line.data.run_id === run.run_id);
    expect(aboutRun).toEqual([
      {
        level: "warn",
        message: "run failed",
        data: expect.objectContaining({
          run_id: run.run_id,
          thread_id: threadId,
          tenant_id: expect.any(String),
          reason: "provider_error",
          failure_message: (failed as { message: string }).message,
          error_kind: "rejected",
          error_message: expect.stringMatching(/^The model is not set up: .*API key is missing/),
          cause: expect.stringContaining("API key"),
        }),
      },
    ]);
    expect(lines.filter((line) => line.level === "error")).toEqual([]);
    expect(lines.filter((line) => line.message === "run failed")).toHaveLength(1);
  });
});
