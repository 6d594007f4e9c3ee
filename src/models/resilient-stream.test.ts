import { afterEach, describe, expect, it, vi } from "vitest";
import type { ModelStreamPart } from "../core/model.js";
import { ModelError } from "../core/model-error.js";
import { stallingAttempts } from "../../test/support/stalling-model.js";
import { withResilience } from "./resilient-stream.js";

const text = (value: string): ModelStreamPart => ({ type: "text-delta", text: value });

describe("withResilience, both jobs at once", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("retries a stall before the first part; a stall after a part ends the stream, not retried", async () => {
    vi.useFakeTimers();
    const { model, signals } = stallingAttempts([[], [text("a")], [text("never")]]);
    const resilient = withResilience(model, { retries: { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 100 }, idleTimeoutMs: 1_000 });
    const parts: ModelStreamPart[] = [];
    const failure = (async () => {
      for await (const part of resilient.stream({ messages: [] }, { signal: new AbortController().signal })) parts.push(part);
    })().catch((error: unknown) => error);

    // The first attempt sends nothing: at the timeout its request is aborted, then it is tried again after the backoff.
    await vi.advanceTimersByTimeAsync(999);
    expect(signals.map((signal) => signal.aborted)).toEqual([false]);
    await vi.advanceTimersByTimeAsync(1);
    expect(signals[0]!.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(100);
    expect(signals).toHaveLength(2);
    expect(parts).toEqual([text("a")]);

    // The second attempt streamed a part, then stalls: final, with the timeout's retryable error.
    await vi.advanceTimersByTimeAsync(1_000);
    const error = await failure;
    expect(signals).toHaveLength(2);
    expect(signals[1]!.aborted).toBe(true);
    expect(parts).toEqual([text("a")]);
    expect(ModelError.isInstance(error) && error.kind).toBe("retryable");
  });

  it("a caller's abort during a stall is the caller's: no retry, the caller's reason", async () => {
    vi.useFakeTimers();
    const { model, signals } = stallingAttempts([[], [text("never")]]);
    const resilient = withResilience(model, { retries: { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 100 }, idleTimeoutMs: 1_000 });
    const caller = new AbortController();
    const failure = (async () => {
      for await (const part of resilient.stream({ messages: [] }, { signal: caller.signal })) void part;
    })().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(500);
    const reason = new Error("stopped by the user");
    caller.abort(reason);
    expect(await failure).toBe(reason);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
  });
});
