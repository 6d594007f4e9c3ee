import { describe, expect, it } from "vitest";
import { GenerationMeters } from "./generation-meter.js";

describe("GenerationMeters", () => {
  it("counts every generation started and not kept, summed across steps that generated at once", () => {
    const meters = new GenerationMeters();
    expect(meters.discardedStats()).toEqual({});
    const a = meters.start([{ role: "user", content: "x".repeat(40) }]);
    const b = meters.start([{ role: "user", content: "y".repeat(8) }]);
    const kept = meters.start([{ role: "user", content: "z" }]);
    a.streamChars = 12;
    b.streamChars = 20;
    b.usage = { inputTokens: 3, outputTokens: 7, isEstimated: false };
    expect(meters.keptStats(kept, "done")).toEqual({ llmCallCount: 1, inputTokens: 1, outputTokens: 1, tokensEstimated: true });
    meters.keep(kept);
    expect(meters.discardedStats()).toEqual({
      llmCallCount: 2,
      inputTokens: 10 + 3,
      outputTokens: 3 + 7,
      tokensEstimated: true,
      discardedGenerationCount: 2,
      discardedStreamChars: 32,
      discardedOutputTokens: 10,
    });
  });

  it("leaves a generation discarded until it is kept (a refused publication keeps nothing)", () => {
    const meters = new GenerationMeters();
    const meter = meters.start([]);
    meter.streamChars = 4;
    meters.keptStats(meter, "abcd");
    expect(meters.discardedStats()).toMatchObject({ discardedGenerationCount: 1, discardedStreamChars: 4 });
  });

  it("does not count a live turn's heard part as discarded, and shares its tokens by characters", () => {
    const meters = new GenerationMeters();
    const meter = meters.start([]);
    meter.streamChars = 40;
    meter.usage = { inputTokens: 5, outputTokens: 10, isEstimated: false };
    expect(meters.discardedStats(30)).toMatchObject({ discardedStreamChars: 10, discardedOutputTokens: 3, outputTokens: 10, tokensEstimated: true });
    // An ack past what was generated is clamped: nothing left discarded, never a negative count.
    expect(meters.discardedStats(55)).toMatchObject({ discardedStreamChars: 0, discardedOutputTokens: 0, discardedGenerationCount: 1 });
  });
});
