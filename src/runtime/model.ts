/**
 * The model contract the runtime streams from. It is deliberately small: issue-level adapters
 * (the AI SDK provider specification, a lean OpenAI-compatible reader) map onto it.
 */

/** One message of model context. */
export interface ModelMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string;
}

/** Token counts a model reports (or the runtime estimates, flagged as such). */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  /** True when the figures are an estimate, not the provider's own. */
  isEstimated: boolean;
}

/** One part of a streamed generation. */
export type ModelStreamPart =
  | { type: "text-delta"; text: string }
  | { type: "finish"; finishReason: "stop" | "length" | "other"; usage?: ModelUsage };

/** What a model is asked to continue. */
export interface ModelRequest {
  messages: readonly ModelMessage[];
}

/** A streaming language model that honours an AbortSignal. */
export interface ChatModel {
  /** A stable name such as `demo` or `openai:gpt-4o-mini`. */
  readonly id: string;
  /** Streams a generation; aborting `signal` must stop it (and close any upstream request). */
  stream(request: ModelRequest, options: { signal: AbortSignal }): AsyncIterable<ModelStreamPart>;
  /** A short thread title for the first user message, if the model offers one. */
  title?(firstUserMessage: string, options: { signal: AbortSignal }): Promise<string>;
}

/** A rough token estimate (≈ 4 characters a token) for when a provider reports none. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
