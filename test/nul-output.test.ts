/**
 * A model that writes U+0000 (PostgreSQL's text cannot hold it): on both stores the run completes,
 * and what the client was streamed is exactly what history keeps, each NUL as U+FFFD.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatModel } from "../src/runtime/index.js";
import { deltaText, startHarness, type Harness, type HarnessStore } from "./support/harness.js";

const nulModel: ChatModel = {
  id: "nul",
  async *stream() {
    yield { type: "text-delta", text: "a\u0000b" };
    yield { type: "text-delta", text: " and \u0000" };
    yield { type: "finish", finishReason: "stop" };
  },
};

describe.each<HarnessStore>(["sqlite", "postgres"])("a model's NUL characters (%s)", (storeKind) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ model: nulModel, storeKind });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("completes, streaming and keeping the same text with U+FFFD for each NUL", async () => {
    const threadId = await h.createThread();
    const run = await h.startRun(threadId, "write a NUL");

    const events = await h.events(run.run_id);

    expect(events.at(-1)?.type).toBe("run.completed");
    expect(deltaText(events)).toBe("a\uFFFDb and \uFFFD");
    const history = (await h.api(`/v1/threads/${threadId}/history`)).body;
    expect(history.messages.at(-1)).toMatchObject({ role: "assistant", content: "a\uFFFDb and \uFFFD" });
  });
});
