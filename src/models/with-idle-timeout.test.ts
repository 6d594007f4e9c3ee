import { afterEach, describe, expect, it, vi } from "vitest";
import { ModelError } from "../core/model-error.js";
import type { ChatModel, ModelStreamPart } from "../core/model.js";
import { stallingAttempts } from "../../test/support/stalling-model.js";
import { withIdleTimeout } from "./with-idle-timeout.js";

const text = (value: string): ModelStreamPart => ({ type: "text-delta", text: value });

describe("withIdleTimeout", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("ends a stream that sends nothing for the timeout: the request is aborted, the failure is retryable", async () => {
    vi.useFakeTimers();
    const { model, signals } = stallingAttempts([[text("a")]]);
    const parts: ModelStreamPart[] = [];
    const reading = (async () => {
      for await (const part of withIdleTimeout(model, { idleTimeoutMs: 1_000 }).stream({ messages: [] }, { signal: new AbortController().signal })) parts.push(part);
    })();
    const failure = reading.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(999);
    expect(signals[0]?.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    const error = await failure;
    expect(parts).toEqual([text("a")]);
    expect(signals[0]?.aborted).toBe(true);
    expect(ModelError.isInstance(error) && error.kind).toBe("retryable");
  });

  it("does not count the consumer's time between two parts", async () => {
    vi.useFakeTimers();
    const model: ChatModel = {
      id: "steady",
      async *stream() {
        yield text("a");
        yield text("b");
      },
    };
    const parts: ModelStreamPart[] = [];
    const reading = (async () => {
      for await (const part of withIdleTimeout(model, { idleTimeoutMs: 1_000 }).stream({ messages: [] }, { signal: new AbortController().signal })) {
        parts.push(part);
        // The consumer takes longer than the timeout over each part.
        await new Promise((resolve) => setTimeout(resolve, 5_000));
      }
    })();
    await vi.advanceTimersByTimeAsync(20_000);
    await reading;
    expect(parts).toEqual([text("a"), text("b")]);
  });

  it("passes a Stop through as the Stop, and 0 turns it off", async () => {
    const { model } = stallingAttempts([[]]);
    const controller = new AbortController();
    const reading = (async () => {
      for await (const part of withIdleTimeout(model, { idleTimeoutMs: 60_000 }).stream({ messages: [] }, { signal: controller.signal })) void part;
    })().catch((error: unknown) => error);
    const stop = new Error("stop");
    controller.abort(stop);
    expect(await reading).toBe(stop);
    expect(withIdleTimeout(model, { idleTimeoutMs: 0 })).toBe(model);
  });
});
