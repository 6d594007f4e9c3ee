import { DEMO_TOOL_NAMES } from "../tools/demo-tools.js";
import { abortableDelay } from "../core/abortable-delay.js";
import { titleFromText } from "../core/heuristic-title.js";
import { demoObject, demoObjectChunks } from "./demo-object.js";
import type { ChatModel, ModelMessage, ModelRequest, ModelStreamPart, ToolCall } from "../core/model.js";

/** Options for {@link createDemoModel}. */
export interface DemoModelOptions {
  /** Words streamed per second (default 30, so a person can press Stop); 0 means full speed. */
  wordsPerSecond?: number;
  /** Words in each answer (default 120). */
  wordCount?: number;
}

/** What the demo says after its opening, a sentence at a time, in a cycle. */
const FILLER_SENTENCES = [
  "Tidemark keeps what you saw, what the server confirmed and what external systems accepted apart, so a Stop is exact.",
  "The partial text of a stopped answer is discarded and never published.",
  "The thread stays usable, and a new run can continue from the last checkpoint.",
  "Press Stop at any time to see it.",
  "Reload the history afterwards: only confirmed messages are there.",
].map((sentence) => sentence.split(" "));
const FILLER = FILLER_SENTENCES.flat();

/** Short closing sentences by length, for an answer whose last filler sentence would not fit. */
const SHORT_CLOSINGS = [[], ["Done."], ["That's", "all."], ["That", "is", "all."], ["This", "answer", "is", "complete."]];
/** A longer closing: this opening and as many of the items as it takes, each prefix a whole sentence. */
const CLOSING_OPENING = ["Things", "to", "try", "next:"];
const CLOSING_ITEMS = ["Stop", "Continue", "Branch", "Save", "Delete", "Reload", "Approve", "Reject", "Search", "Email", "Fork", "Resume", "Retry", "Wait", "Read"];

/** Words between yields to the event loop at full speed, so I/O and a Stop still get a turn. */
const FULL_SPEED_YIELD_EVERY = 64;

/**
 * The built-in demo model: deterministic, no key, streams words at a readable pace, honours
 * the signal, and says in its own text that it is a demo. When the request offers the demo tools
 * (`search_catalog`, `send_email`) and the user asks to search or to email, it calls them.
 */
export function createDemoModel(options: DemoModelOptions = {}): ChatModel {
  const wordsPerSecond = options.wordsPerSecond ?? 30;
  const wordCount = options.wordCount ?? 120;
  const intervalMs = wordsPerSecond > 0 ? 1000 / wordsPerSecond : 0;
  return {
    id: "demo",
    stream: (request, { signal }) => streamDemoAnswer(request, signal, wordCount, intervalMs),
    title: async (firstUserMessage) => titleFromText(firstUserMessage),
  };
}

/**
 * The demo's deterministic text for a request, as words (for tests and small answers): the
 * answer, or, when it asks for a tool, the short sentence before the call.
 */
export function demoAnswerWords(request: ModelRequest, wordCount: number): string[] {
  const turn = planDemoTurn(request);
  const answer = turn.toolCall ? wordsOf(turn.sentence) : createDemoAnswer(request, wordCount);
  return Array.from({ length: answer.length }, (_, index) => answer.wordAt(index));
}

/** Words by index: nothing is allocated up front, however long the answer. */
interface Words {
  length: number;
  wordAt(index: number): string;
}

function wordsOf(text: string): Words {
  const words = text.split(" ");
  return { length: words.length, wordAt: (index) => words[index]! };
}

/** The answer to the last user message, opened by a report of any tool results just received. */
function createDemoAnswer(request: ModelRequest, wordCount: number): Words {
  const lastUser = [...request.messages].reverse().find((message) => message.role === "user");
  const echo = collapse(lastUser?.content ?? "").split(" ").slice(0, 12).join(" ");
  const report = toolResultReport(request.messages);
  const disclaimer = `This is the Tidemark demo model, not a real language model. You wrote: "${echo}".`;
  const opening = (report ? `${report} ${disclaimer}` : disclaimer).split(" ");
  const filler = createFiller(Math.max(0, wordCount - opening.length));
  return {
    length: opening.length + filler.length,
    wordAt: (index) => (index < opening.length ? opening[index]! : filler.wordAt(index - opening.length)),
  };
}

/**
 * Exactly `wordCount` words of filler that end on a whole sentence, so that only a real Stop
 * leaves an answer cut mid-sentence: whole cycles of the filler, then its sentences while they
 * fit, then a closing sentence of exactly the words left.
 */
function createFiller(wordCount: number): Words {
  const cycles = Math.floor(wordCount / FILLER.length);
  let left = wordCount - cycles * FILLER.length;
  const tail: string[] = [];
  for (const sentence of FILLER_SENTENCES) {
    if (sentence.length > left) break;
    tail.push(...sentence);
    left -= sentence.length;
  }
  tail.push(...closingSentence(left));
  const cycleWords = cycles * FILLER.length;
  return { length: wordCount, wordAt: (index) => (index < cycleWords ? FILLER[index % FILLER.length]! : tail[index - cycleWords]!) };
}

/** A whole sentence of exactly `wordCount` words (none for 0); shorter than the longest filler sentence. */
function closingSentence(wordCount: number): string[] {
  if (wordCount < SHORT_CLOSINGS.length) return SHORT_CLOSINGS[wordCount]!;
  const items = CLOSING_ITEMS.slice(0, wordCount - CLOSING_OPENING.length);
  return [...CLOSING_OPENING, ...items.map((item, index) => (index === items.length - 1 ? `${item}.` : `${item},`))];
}

type DemoTurn = { toolCall: ToolCall; sentence: string } | { toolCall?: undefined };

const SEARCH_WORDS = /\b(?:search\w*|find|look\s+up)\b/i;
const EMAIL_WORDS = /\b(?:e-?mail\w*|send\s+a\s+mail)\b/i;
const SEARCH_QUERY = /\b(?:search\w*(?:\s+the\s+catalog)?\s+for|find|look\s+up)\s+(.+)/i;
const EMAIL_ADDRESS = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/;

/**
 * Whether the demo asks for a tool: only when the last message is the user's, it mentions
 * searching or emailing (the earlier mention wins), and the request offers that tool.
 */
function planDemoTurn(request: ModelRequest): DemoTurn {
  const last = request.messages.at(-1);
  if (last?.role !== "user") return {};
  const offered = new Set((request.tools ?? []).map((tool) => tool.name));
  const text = collapse(last.content);
  const searchAt = offered.has(DEMO_TOOL_NAMES.searchCatalog) ? text.search(SEARCH_WORDS) : -1;
  const emailAt = offered.has(DEMO_TOOL_NAMES.sendEmail) ? text.search(EMAIL_WORDS) : -1;
  if (searchAt < 0 && emailAt < 0) return {};
  // Unique within a thread: each model step sees a longer history than the one before.
  const callFor = (toolName: string, input: unknown): ToolCall => ({
    toolCallId: `call_${request.messages.length}_${toolName}`,
    toolName,
    input: JSON.stringify(input),
  });
  if (searchAt >= 0 && (emailAt < 0 || searchAt <= emailAt)) {
    return { sentence: "Let me search the catalog.", toolCall: callFor(DEMO_TOOL_NAMES.searchCatalog, { query: searchQuery(text) }) };
  }
  const to = EMAIL_ADDRESS.exec(text)?.[0] ?? "demo@example.com";
  const email = { to, subject: "Message from the Tidemark demo", body: last.content.trim() };
  return { sentence: "Let me send that email.", toolCall: callFor(DEMO_TOOL_NAMES.sendEmail, email) };
}

/** The words after "search for" / "find" / "look up", else the whole message; at most 80 characters. */
function searchQuery(text: string): string {
  const query = (SEARCH_QUERY.exec(text)?.[1] ?? "").replace(/[?!.]+$/, "").slice(0, 80).trim();
  return query.length > 0 ? query : text.slice(0, 80).trim();
}

/** One sentence per tool result at the end of the history, saying truthfully what came back. */
function toolResultReport(messages: readonly ModelMessage[]): string | undefined {
  const results: Extract<ModelMessage, { role: "tool" }>[] = [];
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index]!;
    if (message.role !== "tool") break;
    results.unshift(message);
  }
  return results.length > 0 ? results.map(reportToolResult).join(" ") : undefined;
}

function reportToolResult(result: Extract<ModelMessage, { role: "tool" }>): string {
  const content = collapse(result.content);
  const parsed = result.isError ? undefined : parseJson(result.content);
  if (result.toolName === DEMO_TOOL_NAMES.searchCatalog) {
    if (isCatalogResult(parsed)) {
      const names = parsed.items.map((item) => item.name).join(", ");
      return `I found ${parsed.items.length} items for "${parsed.query}"${names ? `: ${names}` : ""}.`;
    }
    return sentence(`The search did not complete: ${content}`);
  }
  if (result.toolName === DEMO_TOOL_NAMES.sendEmail) {
    if (isRecord(parsed) && typeof parsed.message_id === "string") return `The email was handed to the outbox (message ${parsed.message_id}).`;
    // An unknown outcome may have been sent: saying "not sent" would be a lie.
    if (/\bunknown\b/i.test(content)) return sentence(`The email's outcome is unknown: ${content}`);
    return sentence(`The email was not sent: ${content}`);
  }
  return sentence(`The tool ${result.toolName} returned: ${content}`);
}

function isCatalogResult(value: unknown): value is { query: string; items: { name: string }[] } {
  return (
    isRecord(value) &&
    typeof value.query === "string" &&
    Array.isArray(value.items) &&
    value.items.every((item) => isRecord(item) && typeof item.name === "string")
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Ends `text` with a full stop unless it already ends a sentence. */
function sentence(text: string): string {
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

async function* streamDemoAnswer(
  request: ModelRequest,
  signal: AbortSignal,
  wordCount: number,
  intervalMs: number,
): AsyncGenerator<ModelStreamPart> {
  signal.throwIfAborted();
  if (request.responseFormat) {
    yield* streamDemoObject(request, signal, intervalMs);
    return;
  }
  const turn = planDemoTurn(request);
  const answer = turn.toolCall ? wordsOf(turn.sentence) : createDemoAnswer(request, wordCount);
  const inputTokens = request.messages.reduce((sum, message) => sum + message.content.split(/\s+/).length, 0);
  for (let index = 0; index < answer.length; index++) {
    if (intervalMs > 0) await abortableDelay(intervalMs, signal);
    else if (index % FULL_SPEED_YIELD_EVERY === FULL_SPEED_YIELD_EVERY - 1) await new Promise(setImmediate);
    signal.throwIfAborted();
    yield { type: "text-delta", text: index === 0 ? answer.wordAt(index) : ` ${answer.wordAt(index)}` };
  }
  if (turn.toolCall) yield { type: "tool-call", toolCall: turn.toolCall };
  // The demo counts words as its tokens: its own figures, not an estimate.
  const usage = { inputTokens, outputTokens: answer.length, isEstimated: false };
  yield { type: "finish", finishReason: turn.toolCall ? "tool-calls" : "stop", usage };
}

/** A structured request's answer: an example object of its schema, streamed a piece at a time. */
async function* streamDemoObject(request: ModelRequest, signal: AbortSignal, intervalMs: number): AsyncGenerator<ModelStreamPart> {
  const pieces = demoObjectChunks(demoObject(request.responseFormat!.schema));
  for (const piece of pieces) {
    if (intervalMs > 0) await abortableDelay(intervalMs, signal);
    else await new Promise(setImmediate);
    signal.throwIfAborted();
    yield { type: "text-delta", text: piece };
  }
  const inputTokens = request.messages.reduce((sum, message) => sum + message.content.split(/\s+/).length, 0);
  yield { type: "finish", finishReason: "stop", usage: { inputTokens, outputTokens: pieces.length, isEstimated: false } };
}

export { titleFromText };
