/** The built-in demo model: deterministic, honest about being a demo, and stoppable at once. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createDemoModel, demoAnswerWords, titleFromText } from "./demo-model.js";
import type { ModelRequest, ModelStreamPart } from "./model.js";

const request: ModelRequest = {
  messages: [
    { role: "system", content: "be brief" },
    { role: "user", content: "first question" },
    { role: "assistant", content: "an earlier answer" },
    { role: "user", content: "  what  happens\nwhen I press Stop?  " },
  ],
};

async function collect(parts: AsyncIterable<ModelStreamPart>): Promise<ModelStreamPart[]> {
  const collected: ModelStreamPart[] = [];
  for await (const part of parts) collected.push(part);
  return collected;
}

function textOf(parts: readonly ModelStreamPart[]): string {
  return parts.map((part) => (part.type === "text-delta" ? part.text : "")).join("");
}

describe("demoAnswerWords", () => {
  it("is deterministic and answers the last user message", () => {
    const words = demoAnswerWords(request, 80);

    expect(words).toEqual(demoAnswerWords(request, 80));
    expect(words).toHaveLength(80);
    expect(words.join(" ")).toContain('You wrote: "what happens when I press Stop?".');
    expect(words.join(" ")).not.toContain("first question");
  });

  it("says it is a demo model, even when asked for fewer words than that takes", () => {
    const words = demoAnswerWords(request, 3);

    expect(words.join(" ").startsWith("This is the Tidemark demo model, not a real language model.")).toBe(true);
    expect(words.length).toBeGreaterThan(3);
  });

  it("echoes at most twelve words of the user's message", () => {
    const long = Array.from({ length: 30 }, (_, index) => `w${index}`).join(" ");

    const text = demoAnswerWords({ messages: [{ role: "user", content: long }] }, 10).join(" ");

    expect(text).toContain('"w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11".');
  });
});

describe("createDemoModel stream", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("streams the deterministic words, then a finish part with its usage", async () => {
    const model = createDemoModel({ wordsPerSecond: 0, wordCount: 40 });

    const parts = await collect(model.stream(request, { signal: new AbortController().signal }));

    expect(model.id).toBe("demo");
    expect(textOf(parts)).toBe(demoAnswerWords(request, 40).join(" "));
    expect(parts.filter((part) => part.type === "text-delta")).toHaveLength(40);
    // Input tokens are the words of every message (whitespace-split), output tokens the words sent.
    const inputTokens = request.messages.reduce((sum, message) => sum + message.content.split(/\s+/).length, 0);
    expect(parts.at(-1)).toEqual({
      type: "finish",
      finishReason: "stop",
      usage: { inputTokens, outputTokens: 40, isEstimated: false },
    });
    expect(parts.filter((part) => part.type === "finish")).toHaveLength(1);
  });

  it("at full speed yields every word of a long answer", async () => {
    const model = createDemoModel({ wordsPerSecond: 0, wordCount: 1_000 });

    const parts = await collect(model.stream(request, { signal: new AbortController().signal }));

    expect(parts).toHaveLength(1_001);
    expect(textOf(parts).split(" ")).toEqual(demoAnswerWords(request, 1_000));
  });

  it("gives two identical runs the same text", async () => {
    const model = createDemoModel({ wordsPerSecond: 0, wordCount: 50 });
    const signal = new AbortController().signal;

    const [first, second] = await Promise.all([collect(model.stream(request, { signal })), collect(model.stream(request, { signal }))]);

    expect(first).toEqual(second);
  });

  it("refuses to start with an aborted signal", async () => {
    const controller = new AbortController();
    const reason = new Error("stopped before start");
    controller.abort(reason);
    const model = createDemoModel({ wordsPerSecond: 0 });

    await expect(collect(model.stream(request, { signal: controller.signal }))).rejects.toBe(reason);
  });

  it("rejects a pending read as soon as the signal aborts, without waiting for the next word", async () => {
    vi.useFakeTimers();
    // One word a minute: only the abort can settle a pending read before the clock moves.
    const model = createDemoModel({ wordsPerSecond: 1 / 60, wordCount: 10 });
    const controller = new AbortController();
    const iterator = model.stream(request, { signal: controller.signal })[Symbol.asyncIterator]();

    const firstRead = iterator.next();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await firstRead).toEqual({ done: false, value: { type: "text-delta", text: "This" } });

    const pendingRead = iterator.next();
    const reason = new Error("user pressed stop");
    controller.abort(reason);

    await expect(pendingRead).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
    await expect(iterator.next()).resolves.toEqual({ done: true, value: undefined });
  });

  it("stops a full-speed stream between words when the signal aborts", async () => {
    const model = createDemoModel({ wordsPerSecond: 0, wordCount: 10_000 });
    const controller = new AbortController();
    const reason = new Error("stop");
    let received = 0;

    const consume = async (): Promise<void> => {
      for await (const part of model.stream(request, { signal: controller.signal })) {
        received++;
        if (received === 100 && part.type === "text-delta") controller.abort(reason);
      }
    };

    await expect(consume()).rejects.toBe(reason);
    expect(received).toBe(100);
  });
});

describe("titles", () => {
  it("uses the first six words of the first message, whitespace collapsed", () => {
    expect(titleFromText("  How do I\n\tstop a run   without losing my work?")).toBe("How do I stop a run");
  });

  it("shortens a long title to 60 characters with an ellipsis", () => {
    const title = titleFromText(`${"a".repeat(40)} ${"b".repeat(40)}`);

    expect(title).toHaveLength(58);
    expect(title).toBe(`${"a".repeat(40)} ${"b".repeat(16)}…`);
  });

  it("names an empty message 'New thread'", () => {
    expect(titleFromText("")).toBe("New thread");
    expect(titleFromText(" \n\t ")).toBe("New thread");
  });

  it("is the model's title hook", async () => {
    const model = createDemoModel();

    await expect(model.title?.("Plan a trip to Lisbon in May please", { signal: new AbortController().signal })).resolves.toBe(
      "Plan a trip to Lisbon in",
    );
  });
});
