import { describe, expect, it } from "vitest";
import type { ModelStreamPart } from "../core/model.js";
import { ModelError } from "../core/model-error.js";
import { readChatCompletion } from "./openai-compatible-model.js";

const textChunk = (text: string) => `data: ${JSON.stringify({ choices: [{ delta: { content: text } }] })}\n\n`;
const finishChunk = `data: ${JSON.stringify({ choices: [{ delta: {}, finish_reason: "stop" }], usage: { prompt_tokens: 3, completion_tokens: 2 } })}\n\n`;
const errorChunk = `data: ${JSON.stringify({ error: { code: 503, message: "overloaded" } })}\n\n`;

/** A body of the given chunks that records what the reader did to it; `breakAfter` fails the next read after that many. */
function bodyOf(chunks: string[], options: { breakAfter?: number } = {}) {
  const log: string[] = [];
  let index = 0;
  const body: AsyncIterableIterator<string> = {
    next: async () => {
      if (options.breakAfter !== undefined && index === options.breakAfter) throw new Error("socket reset");
      return index < chunks.length ? { value: chunks[index++]!, done: false } : { value: undefined, done: true };
    },
    return: async () => {
      log.push("closed");
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  return { body, log };
}

function readerOf(chunks: string[], options: { breakAfter?: number; signal?: AbortSignal } = {}) {
  const { body, log } = bodyOf(chunks, options);
  const reader = readChatCompletion(
    async () => {
      log.push("opened");
      return body;
    },
    options.signal ?? new AbortController().signal,
    () => log.push("released"),
  );
  return { reader, log };
}

async function readAll(reader: AsyncIterable<ModelStreamPart>): Promise<{ parts: ModelStreamPart[]; error?: unknown }> {
  const parts: ModelStreamPart[] = [];
  try {
    for await (const part of reader) parts.push(part);
  } catch (error) {
    return { parts, error };
  }
  return { parts };
}

describe("readChatCompletion", () => {
  it("hands out every text as it comes (two in one chunk too), then the finish, closing the body before the end and releasing last", async () => {
    const { reader, log } = readerOf([textChunk("a"), textChunk("b") + textChunk("c"), finishChunk, "data: [DONE]\n\n"]);
    const { parts, error } = await readAll(reader);
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      { type: "text-delta", text: "a" },
      { type: "text-delta", text: "b" },
      { type: "text-delta", text: "c" },
      { type: "finish", finishReason: "stop", usage: { inputTokens: 3, outputTokens: 2, isEstimated: false } },
    ]);
    expect(log).toEqual(["opened", "closed", "released"]);
    await expect(reader.next()).resolves.toEqual({ value: undefined, done: true });
    expect(log).toEqual(["opened", "closed", "released"]);
  });

  it("gives the texts before a provider's error chunk, then throws it, with the body closed and released", async () => {
    const { reader, log } = readerOf([textChunk("a") + errorChunk + textChunk("never"), finishChunk]);
    const { parts, error } = await readAll(reader);
    expect(parts).toEqual([{ type: "text-delta", text: "a" }]);
    expect(ModelError.isInstance(error) && error.kind).toBe("retryable");
    expect(log).toEqual(["opened", "closed", "released"]);
  });

  it("throws a body that broke off as the provider's failure, or as the run's abort when it was that", async () => {
    const broken = readerOf([textChunk("a")], { breakAfter: 1 });
    const first = await readAll(broken.reader);
    expect(first.parts).toHaveLength(1);
    expect(ModelError.isInstance(first.error) && first.error.message).toBe("The model provider's stream broke off.");
    expect(broken.log).toEqual(["opened", "closed", "released"]);

    const controller = new AbortController();
    controller.abort(new Error("stopped by the user"));
    const aborted = readerOf([textChunk("a")], { breakAfter: 1, signal: controller.signal });
    const second = await readAll(aborted.reader);
    expect(second.error).toBe(controller.signal.reason);
  });

  it("fails a body that ended before saying it was done, after closing it", async () => {
    const { reader, log } = readerOf([textChunk("a")]);
    const { parts, error } = await readAll(reader);
    expect(parts).toEqual([{ type: "text-delta", text: "a" }]);
    expect(ModelError.isInstance(error) && error.message).toBe("The model provider's stream ended early.");
    expect(log).toEqual(["opened", "closed", "released"]);
  });

  it("gives up a chunk that is not JSON: thrown, the body closed and released", async () => {
    const { reader, log } = readerOf([textChunk("a"), "data: {not json\n\n"]);
    const { parts, error } = await readAll(reader);
    expect(parts).toHaveLength(1);
    expect(error).toBeInstanceOf(SyntaxError);
    expect(log).toEqual(["opened", "closed", "released"]);
  });

  it("releases when the body could not be opened, without closing what never opened", async () => {
    const log: string[] = [];
    const reader = readChatCompletion(
      () => Promise.reject(new ModelError("retryable", "unreachable")),
      new AbortController().signal,
      () => log.push("released"),
    );
    const { error } = await readAll(reader);
    expect(ModelError.isInstance(error) && error.message).toBe("unreachable");
    expect(log).toEqual(["released"]);
  });

  it("closes the body and releases once when the consumer leaves mid-stream, and only releases when it leaves during the end", async () => {
    const mid = readerOf([textChunk("a"), textChunk("b"), finishChunk, "data: [DONE]\n\n"]);
    for await (const part of mid.reader) {
      expect(part).toEqual({ type: "text-delta", text: "a" });
      break;
    }
    expect(mid.log).toEqual(["opened", "closed", "released"]);
    await mid.reader.return(undefined);
    expect(mid.log).toEqual(["opened", "closed", "released"]);

    const end = readerOf([textChunk("a"), finishChunk, "data: [DONE]\n\n"]);
    for await (const part of end.reader) if (part.type === "finish") break;
    expect(end.log).toEqual(["opened", "closed", "released"]);
  });

  it("opens nothing when left before its first read", async () => {
    const { reader, log } = readerOf([textChunk("a")]);
    await expect(reader.return(undefined)).resolves.toEqual({ value: undefined, done: true });
    await expect(reader.next()).resolves.toEqual({ value: undefined, done: true });
    expect(log).toEqual([]);
  });
});
