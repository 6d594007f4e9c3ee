import type { ChatModel, ModelMessage, ModelRequest, ModelStreamPart } from "../core/model.js";
import { ModelError, parseRetryAfter } from "../core/model-error.js";
import { ChatCompletionChunks } from "./chat-completion-chunks.js";
import { postUpstream, type UpstreamResponse } from "./upstream-post.js";
import { registerProviderCancel, type ProviderCancelOptions } from "./provider-cancel.js";

/** Options for {@link createOpenAICompatibleModel}. */
export interface OpenAICompatibleModelOptions {
  /** The model name sent upstream, e.g. `llama3.1` or `gpt-4o-mini`. */
  model: string;
  /** The API base, e.g. `http://127.0.0.1:11434/v1` (Ollama) or `https://api.openai.com/v1`. */
  baseURL: string;
  apiKey?: string;
  /** Extra request headers. */
  headers?: Record<string, string>;
  /** An explicit cancel call, for gateways that keep generating after a disconnect. */
  cancel?: ProviderCancelOptions;
  maxOutputTokens?: number;
  /** Where cancel-call failures are reported (default: ignored). */
  onBackgroundError?: (error: unknown) => void;
  /** The name this model reports (default `openai-compatible:<model>`). */
  id?: string;
}

/**
 * A lean reader for OpenAI-compatible chat-completions streams (OpenAI, vLLM, Ollama, LM Studio,
 * llama.cpp): `node:http` + an SSE parser + `JSON.parse` per chunk, below the bare cost of reading
 * the stream with `fetch`. Aborting the signal destroys the request's socket at once, so the
 * upstream connection closes (decision 016).
 */
export function createOpenAICompatibleModel(options: OpenAICompatibleModelOptions): ChatModel {
  const endpoint = new URL(`${options.baseURL.replace(/\/+$/, "")}/chat/completions`);
  const headers = {
    "content-type": "application/json",
    ...(options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {}),
    ...options.headers,
  };
  const onBackgroundError = options.onBackgroundError ?? (() => {});

  async function post(body: Record<string, unknown>, signal: AbortSignal, extraHeaders: Record<string, string>): Promise<UpstreamResponse> {
    let response: UpstreamResponse;
    try {
      response = await postUpstream(endpoint, { ...headers, ...extraHeaders }, JSON.stringify(body), signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      // A refused or reset connection before any answer: worth another attempt.
      throw new ModelError("retryable", "The model provider could not be reached.", { cause: error });
    }
    if (response.status < 200 || response.status > 299) {
      const detail = await response.text().catch(() => "");
      throw ModelError.fromStatus(response.status, {
        retryAfterMs: parseRetryAfter(response.header("retry-after") ?? null),
        cause: new Error(`HTTP ${response.status}: ${detail.slice(0, 500)}`),
      });
    }
    return response;
  }

  return {
    id: options.id ?? `openai-compatible:${options.model}`,
    stream(request: ModelRequest, { signal }): AsyncGenerator<ModelStreamPart> {
      let cancel: ReturnType<typeof registerProviderCancel> | undefined;
      const open = async (): Promise<AsyncIterable<string>> => {
        signal.throwIfAborted();
        cancel = registerProviderCancel(options.cancel, signal, onBackgroundError);
        const response = await post(chatCompletionBody(options, request), signal, cancel.headers);
        return response.chunks();
      };
      // The reader opens the request itself: one generator between the socket and the run, not two.
      return readChatCompletion(open, signal, () => cancel?.release());
    },
    async title(firstUserMessage, { signal }) {
      const response = await post(
        {
          model: options.model,
          messages: [
            { role: "system", content: "Write a title of at most six words for a conversation that starts with the user's message. Answer with the title only." },
            { role: "user", content: firstUserMessage.slice(0, 2_000) },
          ],
          max_tokens: 24,
          stream: false,
        },
        signal,
        {},
      );
      const body = JSON.parse(await response.text()) as { choices?: { message?: { content?: string } }[] };
      const title = body.choices?.[0]?.message?.content?.trim().replace(/^["'«]+|["'».]+$/g, "") ?? "";
      if (!title) throw new ModelError("rejected", "The model gave no title.");
      return title;
    },
  };
}

/** A streaming chat-completions request's body. */
function chatCompletionBody(options: OpenAICompatibleModelOptions, request: ModelRequest): Record<string, unknown> {
  return {
    model: options.model,
    messages: request.messages.map(toOpenAIMessage),
    stream: true,
    stream_options: { include_usage: true },
    ...(options.maxOutputTokens ? { max_tokens: options.maxOutputTokens } : {}),
    ...(request.tools?.length
      ? {
          tools: request.tools.map((tool) => ({
            type: "function",
            function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
          })),
        }
      : {}),
    ...(request.responseFormat
      ? { response_format: { type: "json_schema", json_schema: { name: request.responseFormat.name, schema: request.responseFormat.schema } } }
      : {}),
  };
}

/** Reads a chat-completions SSE body (text chunks) into stream parts; tool calls are emitted once complete. */
export function readChatCompletionStream(body: AsyncIterable<string>, signal: AbortSignal): AsyncGenerator<ModelStreamPart> {
  return readChatCompletion(async () => body, signal);
}

/** {@link readChatCompletionStream} of the body `open` gives; `release` runs once the reading is over, however it ended (exported for its tests). */
export async function* readChatCompletion(open: () => Promise<AsyncIterable<string>>, signal: AbortSignal, release?: () => void): AsyncGenerator<ModelStreamPart> {
  try {
    const completion = new ChatCompletionChunks();
    const chunks = (await open())[Symbol.asyncIterator]();
    try {
      while (!completion.isDone) {
        let result: IteratorResult<string>;
        try {
          result = await chunks.next();
        } catch (error) {
          throw brokenBodyError(error, signal);
        }
        if (result.done) break;
        // By index: no iterator a chunk.
        const texts = completion.feed(result.value);
        for (let index = 0; index < texts.length; index++) yield { type: "text-delta", text: texts[index]! };
        completion.throwIfFailed();
      }
    } finally {
      // A consumer that stops reading (break, return, an error), or a [DONE] before the body's end, closes the upstream request.
      await chunks.return?.();
    }
    for (const part of completion.endParts()) yield part;
  } finally {
    release?.();
  }
}

/** What a body that broke off throws: the run's own abort when it was that, else the provider's failure. */
function brokenBodyError(error: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  return new ModelError("rejected", "The model provider's stream broke off.", { cause: error });
}

function toOpenAIMessage(message: ModelMessage): Record<string, unknown> {
  if (message.role === "tool") return { role: "tool", tool_call_id: message.toolCallId, content: message.content };
  if (message.role === "assistant" && message.toolCalls?.length) {
    return {
      role: "assistant",
      content: message.content || null,
      tool_calls: message.toolCalls.map((call) => ({
        id: call.toolCallId,
        type: "function",
        function: { name: call.toolName, arguments: call.input },
      })),
    };
  }
  return { role: message.role, content: message.content };
}
