import type { MessageRecord, MessageToolCall } from "../core/index.js";
import type { ModelMessage } from "../core/model.js";

/** The synthetic result for a tool call that history holds no outcome for. */
export const CANCELLED_BEFORE_EXECUTION =
  "[cancelled before execution] This tool call was stopped before it ran, so it has no result.";

/** The label a saved fragment carries in model context: it is not a finished model answer (DESIGN §9). */
export const FRAGMENT_LABEL = "[saved fragment of a stopped answer] ";

/**
 * The label of a saved fragment of a stopped structured step's object: the user saw it forming,
 * but it never validated, so nothing may act on it (issue 19).
 */
export const OBJECT_FRAGMENT_LABEL =
  "[saved fragment of an unfinished object, stopped before it was complete: NOT usable for execution; do not act on it or copy it into a tool call] ";

/** Options for {@link buildModelContext}. */
export interface ModelContextOptions {
  /**
   * The synthetic result for an unanswered tool call (default: cancelled before execution).
   * The operation ledger answers "outcome unknown" here for calls handed to an external system.
   */
  outcomeFor?: (call: MessageToolCall, message: MessageRecord) => string;
}

/**
 * The model context for a thread: its published messages and saved fragments in order (a
 * fragment as an assistant message opened by {@link FRAGMENT_LABEL}). Whatever the history holds,
 * every assistant tool call is followed by a result: an unanswered call gets an explicit
 * synthetic one, and a tool result with no call before it is left out, so a provider never
 * rejects the conversation after a Stop (invariant 7).
 */
export function buildModelContext(messages: readonly MessageRecord[], options: ModelContextOptions = {}): ModelMessage[] {
  const published = messages.filter((message) => message.publicationStatus === "published");
  const answered = new Set(published.flatMap((message) => (message.role === "tool" && message.toolCallId ? [message.toolCallId] : [])));
  const called = new Set<string>();
  const context: ModelMessage[] = [];
  for (const message of messages) {
    if (isFragment(message)) {
      // What the user saw of a stopped answer: kept, but never passed off as the model's own finished turn.
      context.push({ role: "assistant", content: (message.format === "json" ? OBJECT_FRAGMENT_LABEL : FRAGMENT_LABEL) + message.content });
    } else if (message.publicationStatus !== "published") {
      continue;
    } else if (message.role === "assistant") {
      const toolCalls = message.toolCalls ?? [];
      context.push({ role: "assistant", content: message.content, ...(toolCalls.length ? { toolCalls } : {}) });
      for (const call of toolCalls) {
        called.add(call.toolCallId);
        if (answered.has(call.toolCallId)) continue;
        const content = options.outcomeFor?.(call, message) ?? CANCELLED_BEFORE_EXECUTION;
        context.push({ role: "tool", toolCallId: call.toolCallId, toolName: call.toolName, content, isError: true });
      }
    } else if (message.role === "tool") {
      if (message.toolCallId && called.has(message.toolCallId)) {
        context.push({ role: "tool", toolCallId: message.toolCallId, toolName: message.toolName ?? "", content: message.content });
      }
    } else {
      context.push({ role: message.role, content: message.content });
    }
  }
  return context;
}

/** A saved fragment: an assistant message the client kept of a stopped answer. */
function isFragment(message: MessageRecord): boolean {
  return message.publicationStatus === "fragment" && message.role === "assistant";
}

/** Tool calls in `context` without a result after them (for `tidemark check` and tests). */
export function findOrphanToolCalls(context: readonly ModelMessage[]): string[] {
  const results = new Set(context.flatMap((message) => (message.role === "tool" ? [message.toolCallId] : [])));
  return context.flatMap((message) =>
    message.role === "assistant" ? (message.toolCalls ?? []).filter((call) => !results.has(call.toolCallId)).map((call) => call.toolCallId) : [],
  );
}
