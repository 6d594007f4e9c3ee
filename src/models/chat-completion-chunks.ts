import { createParser, type EventSourceParser } from "eventsource-parser";
import type { FinishReason, ModelStreamPart, ModelUsage } from "../core/model.js";
import { ModelError } from "../core/model-error.js";

interface ChunkDelta {
  content?: string | null;
  tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[];
}

interface Chunk {
  choices?: { delta?: ChunkDelta; finish_reason?: string | null }[];
  usage?: { prompt_tokens?: number; completion_tokens?: number } | null;
  error?: { code?: number | string; message?: string };
}

/**
 * What an OpenAI-compatible chat-completions SSE body has said so far. Its text comes out as it
 * is fed; tool calls, the finish reason and usage are kept for its end ({@link endParts}), since a
 * tool call is usable only once whole.
 */
export class ChatCompletionChunks {
  /** The body said `[DONE]`. */
  isDone = false;
  /** The texts of the last {@link feed}: one array, emptied at each feed (no array a chunk). */
  readonly #texts: string[] = [];
  /** An error chunk of the last feed: thrown after the texts before it ({@link throwIfFailed}). */
  #error: ModelError | undefined;
  readonly #toolCalls = new Map<number, { id: string; name: string; arguments: string }>();
  #finishReason: FinishReason = "other";
  #usage: ModelUsage | undefined;
  readonly #parser: EventSourceParser = createParser({ onEvent: (event) => this.#take(event.data) });

  /** Feeds body text; returns the text deltas it completed, in order (valid until the next feed). */
  feed(text: string): readonly string[] {
    this.#texts.length = 0;
    this.#parser.feed(text);
    return this.#texts;
  }

  /** Throws the provider's error when the last feed held one (its earlier texts were returned first). */
  throwIfFailed(): void {
    if (this.#error) throw this.#error;
  }

  /** The parts after the last text: each tool call, then the finish. Throws when the body ended before saying it was done. */
  endParts(): ModelStreamPart[] {
    if (!this.isDone && this.#finishReason === "other" && this.#toolCalls.size === 0 && this.#usage === undefined) {
      throw new ModelError("rejected", "The model provider's stream ended early.");
    }
    const parts: ModelStreamPart[] = [...this.#toolCalls]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({ type: "tool-call", toolCall: { toolCallId: call.id || `call_${index}`, toolName: call.name, input: call.arguments || "{}" } }));
    parts.push({ type: "finish", finishReason: this.#finishReason, usage: this.#usage });
    return parts;
  }

  #take(data: string): void {
    // Nothing after an error counts: the reader throws it once the texts before it are out.
    if (this.#error) return;
    if (data === "[DONE]") {
      this.isDone = true;
      return;
    }
    const chunk = JSON.parse(data) as Chunk;
    if (chunk.error) {
      const status = Number(chunk.error.code);
      this.#error = ModelError.fromStatus(Number.isInteger(status) && status >= 400 ? status : 502, { cause: new Error(chunk.error.message) });
      return;
    }
    const choice = chunk.choices?.[0];
    const text = choice?.delta?.content;
    if (text) this.#texts.push(text);
    for (const call of choice?.delta?.tool_calls ?? []) {
      const entry = this.#toolCalls.get(call.index) ?? { id: "", name: "", arguments: "" };
      if (call.id) entry.id = call.id;
      if (call.function?.name) entry.name += call.function.name;
      if (call.function?.arguments) entry.arguments += call.function.arguments;
      this.#toolCalls.set(call.index, entry);
    }
    if (choice?.finish_reason) this.#finishReason = mapFinishReason(choice.finish_reason);
    if (chunk.usage) {
      this.#usage = { inputTokens: chunk.usage.prompt_tokens ?? 0, outputTokens: chunk.usage.completion_tokens ?? 0, isEstimated: false };
    }
  }
}

function mapFinishReason(reason: string): FinishReason {
  switch (reason) {
    case "stop":
      return "stop";
    case "length":
      return "length";
    case "tool_calls":
    case "function_call":
      return "tool-calls";
    case "content_filter":
      return "content-filter";
    default:
      return "other";
  }
}
