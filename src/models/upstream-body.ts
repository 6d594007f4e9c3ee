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
  #wake: (() => void) | undefined;

  constructor(response: IncomingMessage, release: () => void) {
    this.#response = response;
    this.#release = release;
    response.setEncoding("utf8");
    response.on("data", (chunk: string) => {
      this.#chunks.push(chunk);
      this.#heldChars += chunk.length;
      if (this.#heldChars >= PAUSE_AT_CHARS) response.pause();
      this.#notify();
    });
    response.once("end", () => {
      this.#isEnded = true;
      this.#notify();
    });
    response.once("error", (error) => this.#fail(error));
    // Closed without its end and without an error: the connection was lost mid-body.
    response.once("close", () => {
      if (!this.#isEnded) this.#fail(new Error("The response closed before its end."));
    });
  }

  async next(): Promise<IteratorResult<string>> {
    for (;;) {
      if (this.#chunks.length > 0) {
        const value = this.#chunks.shift()!;
        this.#heldChars -= value.length;
        if (this.#heldChars < RESUME_BELOW_CHARS && this.#response.isPaused()) this.#response.resume();
        return { value, done: false };
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#isEnded) return { value: undefined, done: true };
      await new Promise<void>((resolve) => (this.#wake = resolve));
    }
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
    this.#notify();
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
