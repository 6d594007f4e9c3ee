/**
 * A run as an OpenAI `Response` object. Its `output` holds the run's published assistant messages
 * only: text a Stop discarded never appears, here as in history (DESIGN §4). The model is the
 * agent's name; `background` is whether the run outlives its client (`on_disconnect: continue`);
 * `previous_response_id` is the run before it on its thread (a branch's shared prefix included);
 * `instructions` and `metadata` are the run's own, as the create request gave them.
 */
import type { MessageRecord, RunRecord, RunStatus } from "../../../core/index.js";
import { responseIdOf } from "./response-id.js";

/** The statuses of an OpenAI response. */
export type ResponseStatus = "queued" | "in_progress" | "completed" | "failed" | "cancelled";

/** A run status as an OpenAI response status (a Stop that is still taking effect is `in_progress`). */
export function responseStatusOf(status: RunStatus): ResponseStatus {
  switch (status) {
    case "queued":
      return "queued";
    case "completed":
    case "failed":
    case "cancelled":
      return status;
    default:
      return "in_progress";
  }
}

/** One assistant message as an output item (the item id is the message id). */
export function outputMessageView(messageId: string, text: string, status: "in_progress" | "completed") {
  return {
    id: messageId,
    type: "message" as const,
    status,
    role: "assistant" as const,
    content: status === "completed" ? [outputTextView(text)] : [],
  };
}

/** An `output_text` content part. */
export function outputTextView(text: string) {
  return { type: "output_text" as const, text, annotations: [], logprobs: [] };
}

/** What a view needs besides the run: its thread's messages. */
export interface ResponseViewContext {
  /** The run's thread's messages in order (as `store.listMessages` returns them). */
  messages: readonly MessageRecord[];
  /** Overrides the run's own status (a stream's first events show the response before it ran). */
  status?: ResponseStatus;
}

/** The OpenAI `Response` object of a run. */
export function responseView(run: RunRecord, context: ResponseViewContext) {
  const status = context.status ?? responseStatusOf(run.status);
  const ownMessages = context.messages.filter((message) => message.runId === run.runId);
  const output =
    context.status === undefined
      ? ownMessages
          .filter((message) => message.role === "assistant" && message.publicationStatus === "published" && message.content !== "")
          .map((message) => outputMessageView(message.messageId, message.content, "completed"))
      : [];
  return {
    id: responseIdOf(run.runId),
    object: "response" as const,
    created_at: Math.floor(run.createdAt / 1000),
    status,
    background: run.onDisconnect === "continue",
    error: status === "failed" ? { code: "server_error", message: run.failureMessage ?? "The run failed." } : null,
    incomplete_details: null,
    instructions: run.instructions,
    max_output_tokens: null,
    model: run.agent,
    output,
    output_text: output.map((item) => item.content.map((part) => part.text).join("")).join(""),
    parallel_tool_calls: false,
    previous_response_id: previousResponseId(run, context.messages),
    metadata: run.metadata,
    temperature: null,
    top_p: null,
    tool_choice: "auto" as const,
    tools: [],
    text: { format: { type: "text" as const } },
    truncation: "disabled" as const,
    usage:
      status === "completed"
        ? {
            input_tokens: run.stats.inputTokens,
            input_tokens_details: { cached_tokens: 0 },
            output_tokens: run.stats.outputTokens,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: run.stats.inputTokens + run.stats.outputTokens,
          }
        : null,
  };
}

/** An OpenAI `Response` object as this layer sends it. */
export type ResponseView = ReturnType<typeof responseView>;

/** The response of the run whose messages come right before this run's input on the thread, if any. */
function previousResponseId(run: RunRecord, messages: readonly MessageRecord[]): string | null {
  const inputAt = messages.findIndex((message) => message.runId === run.runId);
  for (let index = (inputAt < 0 ? messages.length : inputAt) - 1; index >= 0; index--) {
    const runId = messages[index]!.runId;
    if (runId !== null && runId !== run.runId) return responseIdOf(runId);
  }
  return null;
}
