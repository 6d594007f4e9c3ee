/** The built-in demo model: deterministic, honest about being a demo, and stoppable at once. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createDemoModel, demoAnswerWords, titleFromText } from "./demo-model.js";
import type { ModelMessage, ModelRequest, ModelStreamPart, ModelToolDefinition } from "../core/model.js";

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

describe("a completed demo answer", () => {
  const endsASentence = (text: string) => /[.!?]["”)]?$/.test(text);
  const requests: ModelRequest[] = [
    request,
    { messages: [{ role: "user", content: "hi" }] },
    { messages: [{ role: "user", content: "Why does it end here, mid" }] },
  ];

  it("ends on a whole sentence, whatever its length, and keeps exactly the words asked for", () => {
    for (const asked of requests) {
      const opening = demoAnswerWords(asked, 0).length;
      for (const wordCount of [...Array.from({ length: 260 }, (_, index) => index), 1_000, 1_001, 10_007]) {
        const words = demoAnswerWords(asked, wordCount);
        const text = words.join(" ");

        expect(words, `${wordCount} words`).toHaveLength(Math.max(wordCount, opening));
        expect(endsASentence(text), `${wordCount} words: …${text.slice(-80)}`).toBe(true);
      }
    }
  });

  it("streams the same whole-sentence text", async () => {
    const model = createDemoModel({ wordsPerSecond: 0, wordCount: 37 });

    const text = textOf(await collect(model.stream(request, { signal: new AbortController().signal })));

    expect(text).toBe(demoAnswerWords(request, 37).join(" "));
    expect(endsASentence(text)).toBe(true);
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

describe("demo tools", () => {
  const searchTool: ModelToolDefinition = { name: "search_catalog", description: "search", inputSchema: { type: "object" } };
  const emailTool: ModelToolDefinition = { name: "send_email", description: "email", inputSchema: { type: "object" } };
  const tools = [searchTool, emailTool];
  const model = createDemoModel({ wordsPerSecond: 0, wordCount: 30 });

  function ask(content: string, offered: readonly ModelToolDefinition[] = tools, earlier: readonly ModelMessage[] = []): ModelRequest {
    return { messages: [...earlier, { role: "user", content }], tools: offered };
  }

  async function streamOf(request: ModelRequest): Promise<ModelStreamPart[]> {
    return collect(model.stream(request, { signal: new AbortController().signal }));
  }

  function toolCallsOf(parts: readonly ModelStreamPart[]) {
    return parts.flatMap((part) => (part.type === "tool-call" ? [part.toolCall] : []));
  }

  it("asks for a search: a short sentence, the call, then a tool-calls finish", async () => {
    const request = ask("Please search for red running shoes?", tools, [{ role: "system", content: "be brief" }]);

    const parts = await streamOf(request);

    expect(textOf(parts)).toBe("Let me search the catalog.");
    expect(parts.slice(-2)).toEqual([
      {
        type: "tool-call",
        toolCall: { toolCallId: "call_2_search_catalog", toolName: "search_catalog", input: JSON.stringify({ query: "red running shoes" }) },
      },
      { type: "finish", finishReason: "tool-calls", usage: { inputTokens: 8, outputTokens: 5, isEstimated: false } },
    ]);
    expect(demoAnswerWords(request, 30).join(" ")).toBe(textOf(parts));
  });

  it("takes the query after 'find' or 'look up', else the whole message, at most 80 characters", async () => {
    const queryOf = async (content: string) => JSON.parse(toolCallsOf(await streamOf(ask(content)))[0]!.input).query;

    expect(await queryOf("Can you find  a desk lamp.")).toBe("a desk lamp");
    expect(await queryOf("look up oak tables")).toBe("oak tables");
    expect(await queryOf("search")).toBe("search");
    expect(await queryOf(`find ${"x".repeat(100)}`)).toBe("x".repeat(80));
  });

  it("asks to send an email to the first address in the message, with the message as its body", async () => {
    const content = "Email bob@example.com and cc ana@example.com: the order shipped.";

    const parts = await streamOf(ask(content));

    expect(textOf(parts)).toBe("Let me send that email.");
    expect(toolCallsOf(parts)).toEqual([
      {
        toolCallId: "call_1_send_email",
        toolName: "send_email",
        input: JSON.stringify({ to: "bob@example.com", subject: "Message from the Tidemark demo", body: content }),
      },
    ]);
    expect(parts.at(-1)).toMatchObject({ type: "finish", finishReason: "tool-calls" });
  });

  it("emails demo@example.com when the message names no address", async () => {
    const [call] = toolCallsOf(await streamOf(ask("please send a mail to the team")));

    expect(JSON.parse(call!.input)).toMatchObject({ to: "demo@example.com", body: "please send a mail to the team" });
  });

  it("follows the earlier mention when a message asks for both", async () => {
    const [first] = toolCallsOf(await streamOf(ask("find a gift, then email me")));
    const [second] = toolCallsOf(await streamOf(ask("e-mail me what you find")));

    expect(first?.toolName).toBe("search_catalog");
    expect(second?.toolName).toBe("send_email");
  });

  it("asks for a tool only when the request offers it", async () => {
    const withoutTools: ModelRequest = { messages: [{ role: "user", content: "search for lamps" }] };

    const parts = await streamOf(withoutTools);

    expect(toolCallsOf(parts)).toEqual([]);
    expect(textOf(parts).startsWith("This is the Tidemark demo model, not a real language model.")).toBe(true);
    expect(parts.at(-1)).toMatchObject({ finishReason: "stop" });
    expect(toolCallsOf(await streamOf(ask("search for lamps", [emailTool])))).toEqual([]);
    expect(toolCallsOf(await streamOf(ask("email ana@example.com", [searchTool])))).toEqual([]);
    expect(toolCallsOf(await streamOf(ask("what happens when I press Stop?")))).toEqual([]);
  });

  it("asks only when the last message is the user's", async () => {
    const request: ModelRequest = {
      messages: [
        { role: "user", content: "search for lamps" },
        { role: "assistant", content: "Earlier." },
      ],
      tools,
    };

    expect(toolCallsOf(await streamOf(request))).toEqual([]);
  });

  describe("after a tool result", () => {
    function afterResult(toolName: string, content: string, isError?: boolean): ModelRequest {
      const call = { toolCallId: `call_1_${toolName}`, toolName, input: "{}" };
      return {
        messages: [
          { role: "user", content: "do it" },
          { role: "assistant", content: "On it.", toolCalls: [call] },
          { role: "tool", toolCallId: call.toolCallId, toolName, content, ...(isError === undefined ? {} : { isError }) },
        ],
        tools,
      };
    }

    const disclaimer = 'This is the Tidemark demo model, not a real language model. You wrote: "do it".';

    it("reports what the search found, then answers as the demo it is", async () => {
      const result = { query: "lamps", items: [{ name: "lamps Basic" }, { name: "lamps Plus" }, { name: "lamps Pro" }] };

      const parts = await streamOf(afterResult("search_catalog", JSON.stringify(result)));

      expect(textOf(parts).startsWith(`I found 3 items for "lamps": lamps Basic, lamps Plus, lamps Pro. ${disclaimer}`)).toBe(true);
      expect(toolCallsOf(parts)).toEqual([]);
      expect(parts.at(-1)).toMatchObject({ type: "finish", finishReason: "stop" });
    });

    it("reports a failed search as it came", async () => {
      const parts = await streamOf(afterResult("search_catalog", "[cancelled before execution] It never ran.", true));

      expect(textOf(parts).startsWith(`The search did not complete: [cancelled before execution] It never ran. ${disclaimer}`)).toBe(true);
    });

    it("reports a sent email with its message id", async () => {
      const parts = await streamOf(afterResult("send_email", JSON.stringify({ message_id: "out_7", sent_at: 1 })));

      expect(textOf(parts).startsWith(`The email was handed to the outbox (message out_7). ${disclaimer}`)).toBe(true);
    });

    it("reports a rejected or cancelled email as not sent, quoting the result", async () => {
      const rejected = await streamOf(afterResult("send_email", "[rejected] The user rejected this action", true));
      const notJson = await streamOf(afterResult("send_email", "stopped before the commit."));

      expect(textOf(rejected).startsWith("The email was not sent: [rejected] The user rejected this action. This is")).toBe(true);
      expect(textOf(notJson).startsWith("The email was not sent: stopped before the commit. This is")).toBe(true);
    });

    it("never calls an email of unknown outcome unsent", async () => {
      const parts = await streamOf(afterResult("send_email", "[outcome unknown] The send may have happened.", true));

      expect(textOf(parts).startsWith("The email's outcome is unknown: [outcome unknown] The send may have happened. This is")).toBe(true);
    });

    it("does not take an error result's JSON for a success", async () => {
      const parts = await streamOf(afterResult("send_email", JSON.stringify({ message_id: "out_1" }), true));

      expect(textOf(parts)).toContain("The email was not sent:");
    });

    it("is deterministic and matches demoAnswerWords", async () => {
      const request = afterResult("send_email", JSON.stringify({ message_id: "out_7", sent_at: 1 }));

      const [first, second] = await Promise.all([streamOf(request), streamOf(request)]);

      expect(first).toEqual(second);
      expect(textOf(first)).toBe(demoAnswerWords(request, 30).join(" "));
    });
  });
});

describe("titles", () => {
  it("keeps a short first message whole, whitespace collapsed", () => {
    expect(titleFromText("  How do I\n\tstop a run   without losing my work?")).toBe("How do I stop a run without losing my work?");
  });

  it("cuts a long one at a word boundary, at most 60 characters with the ellipsis", () => {
    const text = "Please explain in detail how an honest Stop differs from closing the tab while the model streams";

    const title = titleFromText(text);

    expect(title).toBe("Please explain in detail how an honest Stop differs from…");
    expect(title.length).toBeLessThanOrEqual(60);
  });

  it("cuts a word longer than the title with an ellipsis", () => {
    expect(titleFromText(`${"a".repeat(40)} ${"b".repeat(40)}`)).toBe(`${"a".repeat(40)}…`);
    expect(titleFromText("x".repeat(100))).toBe(`${"x".repeat(59)}…`);
  });

  it("names an empty message 'New thread'", () => {
    expect(titleFromText("")).toBe("New thread");
    expect(titleFromText(" \n\t ")).toBe("New thread");
  });

  it("is the model's title hook", async () => {
    const model = createDemoModel();

    await expect(model.title?.("Plan a trip to Lisbon in May please", { signal: new AbortController().signal })).resolves.toBe(
      "Plan a trip to Lisbon in May please",
    );
  });
});
