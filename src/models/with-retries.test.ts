import { afterEach, describe, expect, it, vi } from "vitest";
import { ModelError } from "../core/model-error.js";
import type { ChatModel, ModelStreamPart } from "../core/model.js";
import { withRetries } from "./with-retries.js";

/** A model that plays one script per call: throw an error, or stream parts (then maybe throw). */
function scriptedModel(scripts: ({ parts?: ModelStreamPart[]; error?: unknown })[]) {
  let calls = 0;
  const model: ChatModel = {
    id: "scripted",
    async *stream() {
      const script = scripts[Math.min(calls++, scripts.length - 1)]!;
      for (const part of script.parts ?? []) yield part;
      if (script.error) throw script.error;
    },
  };
  return { model, calls: () => calls };
}

const text = (value: string): ModelStreamPart => ({ type: "text-delta", text: value });
const finish: ModelStreamPart = { type: "finish", finishReason: "stop" };

async function collect(model: ChatModel, signal = new AbortController().signal): Promise<ModelStreamPart[]> {
  const parts: ModelStreamPart[] = [];
  for await (const part of model.stream({ messages: [] }, { signal })) parts.push(part);
  return parts;
}

describe("withRetries", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("retries a retryable failure before the first part, then streams", async () => {
    const scripted = scriptedModel([
      { error: ModelError.fromStatus(429) },
      { error: ModelError.fromStatus(503) },
      { parts: [text("ok"), finish] },
    ]);
    const parts = await collect(withRetries(scripted.model, { baseDelayMs: 1 }));
    expect(parts).toEqual([text("ok"), finish]);
    expect(scripted.calls()).toBe(3);
  });

  it("waits the provider's Retry-After before the next attempt, not less", async () => {
    vi.useFakeTimers();
    const scripted = scriptedModel([{ error: ModelError.fromStatus(429, { retryAfterMs: 60 }) }, { parts: [finish] }]);
    const pending = collect(withRetries(scripted.model, { baseDelayMs: 1 }));
    await vi.advanceTimersByTimeAsync(59);
    expect(scripted.calls()).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(scripted.calls()).toBe(2);
    expect(await pending).toEqual([finish]);
  });

  it("gives up after maxRetries and throws the last error", async () => {
    const scripted = scriptedModel([{ error: ModelError.fromStatus(500) }]);
    await expect(collect(withRetries(scripted.model, { maxRetries: 2, baseDelayMs: 1 }))).rejects.toMatchObject({ kind: "retryable", status: 500 });
    expect(scripted.calls()).toBe(3);
  });

  it("never retries a rejected request or a cancelled one", async () => {
    for (const error of [ModelError.fromStatus(401), ModelError.fromStatus(499)]) {
      const scripted = scriptedModel([{ error }, { parts: [finish] }]);
      await expect(collect(withRetries(scripted.model, { baseDelayMs: 1 }))).rejects.toBe(error);
      expect(scripted.calls()).toBe(1);
    }
  });

  it("never retries once something was streamed: a partial generation is not glued to another", async () => {
    const scripted = scriptedModel([{ parts: [text("half")], error: ModelError.fromStatus(502) }, { parts: [text("whole"), finish] }]);
    const parts: ModelStreamPart[] = [];
    await expect(
      (async () => {
        for await (const part of withRetries(scripted.model, { baseDelayMs: 1 }).stream({ messages: [] }, { signal: new AbortController().signal })) {
          parts.push(part);
        }
      })(),
    ).rejects.toMatchObject({ status: 502 });
    expect(parts).toEqual([text("half")]);
    expect(scripted.calls()).toBe(1);
  });

  it("a Stop interrupts the backoff at once: no time passes, and its timer is gone", async () => {
    vi.useFakeTimers();
    const scripted = scriptedModel([{ error: ModelError.fromStatus(429, { retryAfterMs: 60_000 }) }, { parts: [finish] }]);
    const controller = new AbortController();
    const pending = collect(withRetries(scripted.model, { maxDelayMs: 60_000 }), controller.signal);
    // The first attempt fails inside the generator; abort once the backoff began (its timer is set).
    await vi.advanceTimersByTimeAsync(0);
    expect(vi.getTimerCount()).toBe(1);
    controller.abort(new Error("stop"));
    // The clock never moves: only the abort can end the wait.
    await expect(pending).rejects.toThrow("stop");
    expect(vi.getTimerCount()).toBe(0);
    expect(scripted.calls()).toBe(1);
  });
});
