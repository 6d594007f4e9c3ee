import { describe, expect, it } from "vitest";
import { ModelError } from "../core/model-error.js";
import { ChatCompletionChunks } from "./chat-completion-chunks.js";

const frame = (chunk: unknown): string => `data: ${JSON.stringify(chunk)}\n\n`;
const textChunk = (content: string) => frame({ choices: [{ delta: { content } }] });

describe("ChatCompletionChunks", () => {
  it("gives each feed's texts in order, across frames split between feeds", () => {
    const completion = new ChatCompletionChunks();
    const body = textChunk("Hel") + textChunk("lo");
    expect([...completion.feed(body.slice(0, 10))]).toEqual([]);
    expect([...completion.feed(body.slice(10))]).toEqual(["Hel", "lo"]);
    expect([...completion.feed(textChunk(", world"))]).toEqual([", world"]);
    expect(completion.isDone).toBe(false);
    completion.feed(frame({ choices: [{ delta: {}, finish_reason: "stop" }] }) + "data: [DONE]\n\n");
    expect(completion.isDone).toBe(true);
    expect(completion.endParts()).toEqual([{ type: "finish", finishReason: "stop", usage: undefined }]);
  });

  it("keeps tool calls until the end, whole and by index, then the finish with usage", () => {
    const completion = new ChatCompletionChunks();
    const call = (index: number, part: Record<string, unknown>) => frame({ choices: [{ delta: { tool_calls: [{ index, ...part }] } }] });
    const texts = completion.feed(
      call(1, { id: "call_b", function: { name: "look", arguments: '{"q":' } }) +
        call(0, { function: { name: "send", arguments: "" } }) +
        call(1, { function: { arguments: '"x"}' } }) +
        frame({ choices: [{ delta: {}, finish_reason: "tool_calls" }], usage: { prompt_tokens: 7, completion_tokens: 3 } }) +
        "data: [DONE]\n\n",
    );
    expect(texts).toEqual([]);
    expect(completion.endParts()).toEqual([
      { type: "tool-call", toolCall: { toolCallId: "call_0", toolName: "send", input: "{}" } },
      { type: "tool-call", toolCall: { toolCallId: "call_b", toolName: "look", input: '{"q":"x"}' } },
      { type: "finish", finishReason: "tool-calls", usage: { inputTokens: 7, outputTokens: 3, isEstimated: false } },
    ]);
  });

  it("gives the texts before a provider's error chunk, then throws the error; nothing after it counts", () => {
    const completion = new ChatCompletionChunks();
    const texts = completion.feed(textChunk("partial") + frame({ error: { code: 429, message: "slow down" } }) + textChunk("ignored"));
    expect([...texts]).toEqual(["partial"]);
    const thrown = (() => {
      try {
        completion.throwIfFailed();
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(ModelError);
    expect(thrown).toMatchObject({ kind: ModelError.fromStatus(429).kind, cause: new Error("slow down") });
  });

  it("refuses a body that ended before saying it was done", () => {
    const completion = new ChatCompletionChunks();
    completion.feed(textChunk("cut"));
    expect(() => completion.endParts()).toThrow("ended early");
  });
});
