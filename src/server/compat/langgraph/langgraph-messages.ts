/** Tidemark's messages ⇄ LangChain message dicts (`{type: "human" | "ai" | "tool" | "system", id, content, …}`). */
import type { MessageRecord, RunInput } from "../../../core/index.js";
import { LangGraphError } from "./langgraph-error.js";

/** A published message as a LangChain message dict. */
export function langChainMessage(message: MessageRecord): Record<string, unknown> {
  const common = { id: message.messageId, content: message.content, additional_kwargs: labelOf(message), response_metadata: {} };
  switch (message.role) {
    case "user":
      return { type: "human", ...common };
    case "system":
      return { type: "system", ...common };
    case "tool":
      return { type: "tool", ...common, tool_call_id: message.toolCallId ?? "", name: message.toolName, status: "success" };
    case "assistant":
      return {
        type: "ai",
        ...common,
        tool_calls: (message.toolCalls ?? []).map((call) => ({ type: "tool_call", id: call.toolCallId, name: call.toolName, args: parseArgs(call.input) })),
        invalid_tool_calls: [],
      };
  }
}

/** A streamed piece of an answer, as the `messages-tuple` mode sends it. */
export function aiMessageChunk(messageId: string, text: string): Record<string, unknown> {
  return {
    type: "AIMessageChunk",
    id: messageId,
    content: text,
    additional_kwargs: {},
    response_metadata: {},
    tool_calls: [],
    tool_call_chunks: [],
    invalid_tool_calls: [],
  };
}

/** The fields of {@link aiMessageChunk} after `content`, as JSON (the same for every chunk). */
const CHUNK_TAIL_JSON = ',"additional_kwargs":{},"response_metadata":{},"tool_calls":[],"tool_call_chunks":[],"invalid_tool_calls":[]}';

/**
 * `JSON.stringify(aiMessageChunk(messageId, text))`, built without the object: a run streams one
 * per delta, and only the id and the text differ between them.
 */
export function aiMessageChunkJson(messageId: string, text: string): string {
  return `{"type":"AIMessageChunk","id":${JSON.stringify(messageId)},"content":${JSON.stringify(text)}${CHUNK_TAIL_JSON}`;
}

/**
 * The messages of the visible result a LangGraph client sees at a version: those published up to
 * it, without deleted fragments and rolled-back inputs, unless `deletedAt` says they left the
 * result only after that version (an older state in history shows them as they were).
 */
export function visibleMessages(
  messages: readonly MessageRecord[],
  upToStateVersion = Number.POSITIVE_INFINITY,
  deletedAt: ReadonlyMap<string, number> = new Map(),
): Record<string, unknown>[] {
  return messages
    .filter((message) => message.stateVersion <= upToStateVersion)
    .filter((message) => message.publicationStatus !== "deleted" || (deletedAt.get(message.messageId) ?? 0) > upToStateVersion)
    .map(langChainMessage);
}

/**
 * A run's input (`{messages: [message]}`) as Tidemark's one user message. A message may be a
 * LangChain dict (`type: "human"`), an OpenAI-style one (`role: "user"`) or a string; its content
 * a string or text blocks. Anything else is refused: a run takes exactly one new user message.
 */
export function runInputOf(input: unknown): RunInput {
  const messages = isRecord(input) ? input.messages : undefined;
  const list = Array.isArray(messages) ? messages : messages === undefined ? [] : [messages];
  if (list.length !== 1) throw new LangGraphError(422, "invalid_request", "input.messages must hold exactly one new human message.");
  const [message] = list;
  if (typeof message === "string") return { role: "user", content: nonEmpty(message) };
  const kind = isRecord(message) ? (message.type ?? message.role) : undefined;
  if (!isRecord(message) || (kind !== "human" && kind !== "user")) {
    throw new LangGraphError(422, "invalid_request", 'input.messages[0] must be a human message ({"type": "human", "content": "…"}).');
  }
  return { role: "user", content: nonEmpty(textOf(message.content)) };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    const texts = content.map((block) => (typeof block === "string" ? block : isRecord(block) && block.type === "text" && typeof block.text === "string" ? block.text : undefined));
    if (texts.every((text) => text !== undefined)) return texts.join("");
  }
  throw new LangGraphError(422, "invalid_request", "input.messages[0].content must be a string or a list of text blocks.");
}

function nonEmpty(text: string): string {
  if (text.trim() === "") throw new LangGraphError(422, "invalid_request", "input.messages[0].content must not be empty.");
  if (text.length > 100_000) throw new LangGraphError(422, "invalid_request", "input.messages[0].content is too long.");
  return text;
}

function labelOf(message: MessageRecord): Record<string, unknown> {
  if (message.label === null && message.publicationStatus === "published") return {};
  return { tidemark_label: message.label, tidemark_publication_status: message.publicationStatus };
}

function parseArgs(input: string): unknown {
  try {
    return JSON.parse(input) as unknown;
  } catch {
    return {};
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
