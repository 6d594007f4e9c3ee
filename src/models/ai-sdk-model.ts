import {
  APICallError,
  LoadAPIKeyError,
  LoadSettingError,
  NoSuchModelError,
  UnsupportedFunctionalityError,
  type JSONSchema7,
  type LanguageModelV3, type LanguageModelV3Message, type LanguageModelV3StreamPart } from "@ai-sdk/provider";
import type { ChatModel, FinishReason, ModelMessage, ModelStreamPart, ModelUsage } from "../core/model.js";
import { ModelError } from "../core/model-error.js";
import { registerProviderCancel, type ProviderCancelOptions } from "./provider-cancel.js";

/** Options for {@link fromAISDKModel}. */
export interface AISDKModelOptions {
  /** The name this model reports (default `<provider>:<modelId>`). */
  id?: string;
  /** An explicit cancel call, for gateways that keep generating after a disconnect. */
  cancel?: ProviderCancelOptions;
  maxOutputTokens?: number;
  onBackgroundError?: (error: unknown) => void;
}

/**
 * Runs any language model that implements the AI SDK provider specification (v3): the run's
 * AbortSignal goes to `doStream`, and text deltas, tool calls, finish reasons, usage and errors
 * are mapped onto Tidemark's stream parts.
 *
 * @example
 * import { createAnthropic } from "@ai-sdk/anthropic";
 * const model = fromAISDKModel(createAnthropic()("claude-sonnet-4-5"));
 */
export function fromAISDKModel(model: LanguageModelV3, options: AISDKModelOptions = {}): ChatModel {
  const onBackgroundError = options.onBackgroundError ?? (() => {});
  return {
    id: options.id ?? `${model.provider.split(".")[0]}:${model.modelId}`,
    async *stream(request, { signal }): AsyncGenerator<ModelStreamPart> {
      signal.throwIfAborted();
      const cancel = registerProviderCancel(options.cancel, signal, onBackgroundError);
      try {
        let result: Awaited<ReturnType<LanguageModelV3["doStream"]>>;
        try {
          result = await model.doStream({
            prompt: request.messages.map(toPromptMessage),
            abortSignal: signal,
            headers: cancel.headers,
            ...(options.maxOutputTokens ? { maxOutputTokens: options.maxOutputTokens } : {}),
            ...(request.tools?.length
              ? {
                  tools: request.tools.map((tool) => ({
                    type: "function" as const,
                    name: tool.name,
                    description: tool.description,
                    inputSchema: tool.inputSchema,
                  })),
                }
              : {}),
            ...(request.responseFormat
              ? { responseFormat: { type: "json" as const, name: request.responseFormat.name, schema: request.responseFormat.schema as JSONSchema7 } }
              : {}),
          });
        } catch (error) {
          throw classify(error, signal);
        }
        const reader = result.stream.getReader();
        let hasEnded = false;
        try {
          for (;;) {
            let next: ReadableStreamReadResult<LanguageModelV3StreamPart>;
            try {
              next = await reader.read();
            } catch (error) {
              throw classify(error, signal);
            }
            if (next.done) {
              hasEnded = true;
              return;
            }
            const part = mapPart(next.value, signal);
            if (part) yield part;
          }
        } finally {
          // A consumer that stops reading (break, return, an error) closes the upstream request too.
          if (!hasEnded) await reader.cancel().catch(() => undefined);
          reader.releaseLock();
        }
      } finally {
        cancel.release();
      }
    },
    async title(firstUserMessage, { signal }) {
      const result = await model.doGenerate({
        prompt: [
          { role: "system", content: "Write a title of at most six words for a conversation that starts with the user's message. Answer with the title only." },
          { role: "user", content: [{ type: "text", text: firstUserMessage.slice(0, 2_000) }] },
        ],
        maxOutputTokens: 24,
        abortSignal: signal,
      });
      const text = result.content
        .map((part) => (part.type === "text" ? part.text : ""))
        .join("")
        .trim()
        .replace(/^["'«]+|["'».]+$/g, "");
      if (!text) throw new ModelError("rejected", "The model gave no title.");
      return text;
    },
  };
}

function mapPart(part: LanguageModelV3StreamPart, signal: AbortSignal): ModelStreamPart | undefined {
  switch (part.type) {
    case "text-delta":
      return part.delta ? { type: "text-delta", text: part.delta } : undefined;
    case "tool-call":
      return { type: "tool-call", toolCall: { toolCallId: part.toolCallId, toolName: part.toolName, input: part.input } };
    case "finish":
      return { type: "finish", finishReason: mapFinishReason(part.finishReason.unified), usage: mapUsage(part.usage) };
    case "error":
      throw classify(part.error, signal);
    default:
      return undefined;
  }
}

function mapFinishReason(reason: string): FinishReason {
  return reason === "stop" || reason === "length" || reason === "tool-calls" || reason === "content-filter" ? reason : "other";
}

function mapUsage(usage: { inputTokens: { total: number | undefined }; outputTokens: { total: number | undefined } }): ModelUsage | undefined {
  if (usage.inputTokens.total === undefined && usage.outputTokens.total === undefined) return undefined;
  return { inputTokens: usage.inputTokens.total ?? 0, outputTokens: usage.outputTokens.total ?? 0, isEstimated: false };
}

/** A provider failure as a ModelError with a safe message (never the upstream body or a key). */
function classify(error: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  if (ModelError.isInstance(error)) return error;
  if (APICallError.isInstance(error)) {
    if (error.statusCode !== undefined) {
      const fromStatus = ModelError.fromStatus(error.statusCode, { cause: error });
      return error.isRetryable && fromStatus.kind === "rejected" ? new ModelError("retryable", fromStatus.message, { status: error.statusCode, cause: error }) : fromStatus;
    }
    return new ModelError(error.isRetryable ? "retryable" : "rejected", "The model provider could not be reached.", { cause: error });
  }
  // Raised by the provider package itself before any request (a missing key, an unknown model):
  // its own message names the setting, never a secret or an upstream body.
  if (LoadAPIKeyError.isInstance(error) || LoadSettingError.isInstance(error) || NoSuchModelError.isInstance(error) || UnsupportedFunctionalityError.isInstance(error)) {
    return new ModelError("rejected", `The model is not set up: ${error.message}`, { cause: error });
  }
  return new ModelError("rejected", "The model failed.", { cause: error });
}

function toPromptMessage(message: ModelMessage): LanguageModelV3Message {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content };
    case "user":
      return { role: "user", content: [{ type: "text", text: message.content }] };
    case "assistant":
      return {
        role: "assistant",
        content: [
          ...(message.content ? [{ type: "text" as const, text: message.content }] : []),
          ...(message.toolCalls ?? []).map((call) => ({
            type: "tool-call" as const,
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            input: parseJson(call.input),
          })),
        ],
      };
    case "tool":
      return {
        role: "tool",
        content: [
          {
            type: "tool-result",
            toolCallId: message.toolCallId,
            toolName: message.toolName,
            output: message.isError ? { type: "error-text", value: message.content } : { type: "text", value: message.content },
          },
        ],
      };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
