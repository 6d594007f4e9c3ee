import type { IncomingMessage } from "node:http";

/** Characters held before the socket is paused (the provider then waits on TCP), and the level it resumes below. */
const PAUSE_AT_CHARS = 64 * 1024;
const RESUME_BELOW_CHARS = 16 * 1024;

/**
 * A provider's response body as UTF-8 text chunks, pulled one at a time. Lighter per chunk than a
 * `Readable`'s async iterator (no `read()` round, no stream-state checks); the socket is paused
 * while {@link PAUSE_AT_CHARS} characters wait, so a slow reader still holds the provider back.
 * `return()` (a `for await` left early) hands the body to `release`, which decides whether the
 * connection can be kept.
 */
export class UpstreamBody implements AsyncIterableIterator<string> {
  readonly #response: IncomingMessage;
  readonly #release: () => void;
  #chunks: string[] = [];
  #heldChars = 0;
  #isEnded = false;
  #error: unknown;
  /** The reader's `next()` while nothing is held: the next chunk, the end or the failure settles it directly. */
  #resolveNext: ((result: IteratorResult<string>) => void) | undefined;
  #rejectNext: ((error: unknown) => void) | undefined;

  constructor(response: IncomingMessage, release: () => void) {
    this.#response = response;
    this.#release = release;
    response.setEncoding("utf8");
    response.on("data", (chunk: string) => {
      const resolve = this.#takeNext();
      if (resolve) {
        resolve({ value: chunk, done: false });
        return;
      }
      this.#chunks.push(chunk);
      this.#heldChars += chunk.length;
      if (this.#heldChars >= PAUSE_AT_CHARS) response.pause();
    });
    response.once("end", () => {
      this.#isEnded = true;
      this.#takeNext()?.({ value: undefined, done: true });
    });
    response.once("error", (error) => this.#fail(error));
    // Closed without its end and without an error: the connection was lost mid-body.
    response.once("close", () => {
      if (!this.#isEnded) this.#fail(new Error("The response closed before its end."));
    });
  }

  next(): Promise<IteratorResult<string>> {
    if (this.#chunks.length > 0) {
      const value = this.#chunks.shift()!;
      this.#heldChars -= value.length;
      if (this.#heldChars < RESUME_BELOW_CHARS && this.#response.isPaused()) this.#response.resume();
      return Promise.resolve({ value, done: false });
    }
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#isEnded) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.#resolveNext = resolve;
      this.#rejectNext = reject;
    });
  }

  return(): Promise<IteratorResult<string>> {
    this.#release();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  #fail(error: unknown): void {
    this.#error ??= error;
    const reject = this.#rejectNext;
    if (this.#takeNext()) reject!(this.#error);
  }

  /** The waiting `next()`'s resolve, if one waits; from now on it does not. */
  #takeNext(): ((result: IteratorResult<string>) => void) | undefined {
    const resolve = this.#resolveNext;
    this.#resolveNext = undefined;
    this.#rejectNext = undefined;
    return resolve;
  }
}
