import type { ModelStreamPart } from "../core/model.js";
import { ModelError } from "../core/model-error.js";
import { ChatCompletionChunks } from "./chat-completion-chunks.js";

type PartResult = IteratorResult<ModelStreamPart>;

const DONE: PartResult = { value: undefined, done: true };

/**
 * A chat-completions SSE body (text chunks, from the body `open` gives) read as stream parts:
 * each text as it arrives, then the tool calls, then the finish. `release` runs once the reading
 * is over, however it ended (read to the end, failed, or left early by the consumer).
 *
 * Written by hand, not as an async generator: this is every token's path, and a generator costs a
 * chunk several promises and microtask turns more (its queue, and an await at each `yield`). Here a
 * chunk is one `then` on the body's promise, and a second text of the same chunk a resolved one.
 * It keeps the generator's order of things: the texts before an error in the body come out first;
 * the body is closed before the parts after it, and before a failure is thrown; `release` last.
 */
export class ChatCompletionReader implements AsyncIterableIterator<ModelStreamPart> {
  readonly #completion = new ChatCompletionChunks();
  readonly #open: () => Promise<AsyncIterable<string>>;
  readonly #signal: AbortSignal;
  readonly #release: (() => void) | undefined;
  #chunks: AsyncIterator<string> | undefined;
  #isStarted = false;
  #isDone = false;
  /** The texts of the last chunk (the array is the completion's, refilled at each feed) and the next to hand out. */
  #texts: readonly string[] = [];
  #textIndex = 0;
  /** Once the body is over and closed: the parts after the last text, and the next to hand out. */
  #endParts: ModelStreamPart[] | undefined;
  #endIndex = 0;

  constructor(open: () => Promise<AsyncIterable<string>>, signal: AbortSignal, release?: () => void) {
    this.#open = open;
    this.#signal = signal;
    this.#release = release;
  }

  next(): Promise<PartResult> {
    if (this.#isDone) return Promise.resolve(DONE);
    if (this.#textIndex < this.#texts.length) return Promise.resolve(this.#nextText());
    if (this.#endParts) return Promise.resolve(this.#nextEndPart());
    if (!this.#isStarted) return this.#start();
    return this.#afterTexts();
  }

  /** The consumer left early: the body is closed (unless it was already), then released. */
  async return(): Promise<PartResult> {
    // Never started: nothing was opened, as a generator's return() before its first next() runs nothing.
    if (this.#isDone || !this.#isStarted) {
      this.#isDone = true;
      return DONE;
    }
    this.#isDone = true;
    try {
      if (!this.#endParts) await this.#chunks?.return?.();
    } finally {
      this.#release?.();
    }
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  async #start(): Promise<PartResult> {
    this.#isStarted = true;
    try {
      this.#chunks = (await this.#open())[Symbol.asyncIterator]();
    } catch (error) {
      return this.#fail(error, false);
    }
    return this.#pull();
  }

  #pull(): Promise<PartResult> {
    let pending: Promise<IteratorResult<string>>;
    try {
      pending = this.#chunks!.next();
    } catch (error) {
      pending = Promise.reject(error);
    }
    return pending.then(this.#onChunk, this.#onBroken);
  }

  readonly #onChunk = (result: IteratorResult<string>): PartResult | Promise<PartResult> => {
    if (result.done) return this.#endBody();
    try {
      this.#texts = this.#completion.feed(result.value);
    } catch (error) {
      // A chunk that is not JSON: the body is given up as it stands.
      return this.#fail(error, true);
    }
    this.#textIndex = 0;
    return this.#texts.length > 0 ? this.#nextText() : this.#afterTexts();
  };

  readonly #onBroken = (error: unknown): Promise<PartResult> => this.#fail(brokenBodyError(error, this.#signal), true);

  /** Every text of the last chunk is out: its error now, the end after a `[DONE]`, or the next chunk. */
  #afterTexts(): Promise<PartResult> {
    try {
      this.#completion.throwIfFailed();
    } catch (error) {
      return this.#fail(error, true);
    }
    return this.#completion.isDone ? this.#endBody() : this.#pull();
  }

  #nextText(): PartResult {
    return { value: { type: "text-delta", text: this.#texts[this.#textIndex++]! }, done: false };
  }

  /** The body ended (or said `[DONE]`): it is closed, then the parts after the last text follow. */
  async #endBody(): Promise<PartResult> {
    let parts: ModelStreamPart[];
    try {
      await this.#chunks!.return?.();
      parts = this.#completion.endParts();
    } catch (error) {
      return this.#fail(error, false);
    }
    this.#endParts = parts;
    return this.#nextEndPart();
  }

  #nextEndPart(): PartResult {
    if (this.#endIndex < this.#endParts!.length) return { value: this.#endParts![this.#endIndex++]!, done: false };
    this.#isDone = true;
    this.#release?.();
    return DONE;
  }

  /** Ends the reading with `error`: the body closed first when `isBodyOpen`, then released. */
  async #fail(error: unknown, isBodyOpen: boolean): Promise<never> {
    this.#isDone = true;
    try {
      if (isBodyOpen) await this.#chunks!.return?.();
    } finally {
      this.#release?.();
    }
    throw error;
  }
}

/** What a body that broke off throws: the run's own abort when it was that, else the provider's failure. */
function brokenBodyError(error: unknown, signal: AbortSignal): unknown {
  if (signal.aborted) return signal.reason;
  return new ModelError("rejected", "The model provider's stream broke off.", { cause: error });
}
