/**
 * The model contract the runtime streams from. It is deliberately small: adapters (any AI SDK
 * language model, a lean OpenAI-compatible reader, the demo model) map onto it.
 */

/** A tool call the model asked for; `input` is JSON text. */
export interface ToolCall {
  toolCallId: string;
  toolName: string;
  input: string;
}

/** One message of model context. */
export type ModelMessage =
  | { role: "system" | "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: readonly ToolCall[] }
  | { role: "tool"; toolCallId: string; toolName: string; content: string; isError?: boolean };

/** A tool the model may call (JSON Schema input). */
export interface ModelToolDefinition {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** Token counts a model reports (or the runtime estimates, flagged as such). */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  /** True when the figures are an estimate, not the provider's own. */
  isEstimated: boolean;
}

/** Why a generation ended. */
export type FinishReason = "stop" | "length" | "tool-calls" | "content-filter" | "other";

/** One part of a streamed generation. */
export type ModelStreamPart =
  | { type: "text-delta"; text: string }
  | { type: "tool-call"; toolCall: ToolCall }
  | { type: "finish"; finishReason: FinishReason; usage?: ModelUsage };

/**
 * Asks the model for one JSON object matching `schema` (JSON Schema) instead of free text; the
 * adapters pass it on as the provider's structured-output setting (OpenAI `response_format`).
 */
export interface ModelResponseFormat {
  type: "json";
  /** A short name for the object, e.g. `order_card` (providers require one). */
  name: string;
  schema: Record<string, unknown>;
}

/** What a model is asked to continue. */
export interface ModelRequest {
  messages: readonly ModelMessage[];
  tools?: readonly ModelToolDefinition[];
  /** Ask for a JSON object instead of text (a structured step); absent means free text. */
  responseFormat?: ModelResponseFormat;
}

/** A streaming language model that honours an AbortSignal. */
export interface ChatModel {
  /** A stable name such as `demo` or `openai-compatible:llama3`. */
  readonly id: string;
  /**
   * Streams a generation. Aborting `signal` must stop it at once and close any upstream request.
   * Failures are thrown as {@link ModelError} where the adapter can classify them.
   */
  stream(request: ModelRequest, options: { signal: AbortSignal }): AsyncIterable<ModelStreamPart>;
  /** A short thread title for the first user message, if the model offers one. */
  title?(firstUserMessage: string, options: { signal: AbortSignal }): Promise<string>;
}

/** A rough token estimate (≈ 4 characters a token) for when a provider reports none. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
