import { abortableDelay } from "./cancel-scope.js";
import type { ChatModel, ModelRequest, ModelStreamPart } from "./model.js";

/** Options for {@link createDemoModel}. */
export interface DemoModelOptions {
  /** Words streamed per second (default 30, so a person can press Stop); 0 means full speed. */
  wordsPerSecond?: number;
  /** Words in each answer (default 120). */
  wordCount?: number;
}

const FILLER = (
  "Tidemark keeps what you saw, what the server confirmed and what external systems accepted apart, " +
  "so a Stop is exact: the partial text of a stopped answer is discarded and never published, the " +
  "thread stays usable, and a new run can continue from the last checkpoint. Press Stop at any time " +
  "to see it; reload the history afterwards and only confirmed messages are there."
).split(" ");

/** Words between yields to the event loop at full speed, so I/O and a Stop still get a turn. */
const FULL_SPEED_YIELD_EVERY = 64;

/**
 * The built-in demo model: deterministic, no key, streams words at a readable pace, honours
 * the signal, and says in its own text that it is a demo.
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

/** The demo's deterministic answer to the last user message, as words (for tests and small answers). */
export function demoAnswerWords(request: ModelRequest, wordCount: number): string[] {
  const answer = createDemoAnswer(request, wordCount);
  return Array.from({ length: answer.length }, (_, index) => answer.wordAt(index));
}

/** The answer's words by index: nothing is allocated up front, however long the answer. */
function createDemoAnswer(request: ModelRequest, wordCount: number): { length: number; wordAt(index: number): string } {
  const lastUser = [...request.messages].reverse().find((message) => message.role === "user");
  const echo = (lastUser?.content ?? "").replace(/\s+/g, " ").trim().split(" ").slice(0, 12).join(" ");
  const opening = `This is the Tidemark demo model, not a real language model. You wrote: "${echo}".`.split(" ");
  return {
    length: Math.max(wordCount, opening.length),
    wordAt: (index) => (index < opening.length ? opening[index]! : FILLER[(index - opening.length) % FILLER.length]!),
  };
}

async function* streamDemoAnswer(
  request: ModelRequest,
  signal: AbortSignal,
  wordCount: number,
  intervalMs: number,
): AsyncGenerator<ModelStreamPart> {
  signal.throwIfAborted();
  const answer = createDemoAnswer(request, wordCount);
  const inputTokens = request.messages.reduce((sum, message) => sum + message.content.split(/\s+/).length, 0);
  for (let index = 0; index < answer.length; index++) {
    if (intervalMs > 0) await abortableDelay(intervalMs, signal);
    else if (index % FULL_SPEED_YIELD_EVERY === FULL_SPEED_YIELD_EVERY - 1) await new Promise(setImmediate);
    signal.throwIfAborted();
    yield { type: "text-delta", text: index === 0 ? answer.wordAt(index) : ` ${answer.wordAt(index)}` };
  }
  // The demo counts words as its tokens: its own figures, not an estimate.
  yield { type: "finish", finishReason: "stop", usage: { inputTokens, outputTokens: answer.length, isEstimated: false } };
}

/** A heuristic title: the first words of the first user message. */
export function titleFromText(text: string): string {
  const words = text.replace(/\s+/g, " ").trim().split(" ").slice(0, 6).join(" ");
  const title = words.length > 60 ? `${words.slice(0, 57)}…` : words;
  return title.length > 0 ? title : "New thread";
}
