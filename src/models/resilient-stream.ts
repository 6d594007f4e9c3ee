import { abortableDelay } from "../core/abortable-delay.js";
import type { ChatModel, ModelRequest, ModelStreamPart } from "../core/model.js";
import { ModelError } from "../core/model-error.js";

/** How {@link withResilience} retries a failure that came before the first part. */
export interface RetryPolicy {
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** Options for {@link withResilience}. */
export interface ResilienceOptions {
  /** Retries of a failure before the first part; `false`: none, and a failure passes through as it was thrown. */
  retries: RetryPolicy | false;
  /** The longest wait for the provider's next part; 0: no limit. */
  idleTimeoutMs: number;
}

type PartResult = IteratorResult<ModelStreamPart>;

/**
 * A model's streams with retries before the first part and an idle timeout on the provider's
 * waits (what `withRetries` and `withIdleTimeout` describe), in one layer that adds a single
 * `then` to each part. Two async generators, one inside the other, cost several promises and
 * microtask turns a part each: at a model's pace, a measurable share of the server's CPU.
 */
export function withResilience(model: ChatModel, options: ResilienceOptions): ChatModel {
  return {
    id: model.id,
    title: model.title?.bind(model),
    stream: (request, { signal }) => new ResilientStream(model, request, signal, options),
  };
}

/** One stream of {@link withResilience}: its attempts one after another, read one `next()` at a time (as `for await` reads). */
class ResilientStream implements AsyncIterableIterator<ModelStreamPart> {
  readonly #model: ChatModel;
  readonly #request: ModelRequest;
  readonly #signal: AbortSignal;
  readonly #options: ResilienceOptions;
  #attempts = 0;
  #inner: AsyncIterator<ModelStreamPart> | undefined;
  #hasStreamed = false;
  #isDone = false;
  /** The attempt's own signal, aborted by the caller's or by a stall (with an idle timeout only). */
  #controller: AbortController | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Whether the provider owes the next part: the consumer's time between two parts never counts. */
  #isWaiting = false;
  #stalled: ModelError | undefined;

  constructor(model: ChatModel, request: ModelRequest, signal: AbortSignal, options: ResilienceOptions) {
    this.#model = model;
    this.#request = request;
    this.#signal = signal;
    this.#options = options;
  }

  next(): Promise<PartResult> {
    if (this.#isDone) return Promise.resolve({ value: undefined, done: true });
    if (this.#inner) return this.#pull();
    return this.#signal.aborted ? this.#fail(this.#signal.reason) : this.#attempt();
  }

  /** The consumer left early: the attempt's stream is closed, and its request with it. */
  async return(): Promise<PartResult> {
    if (!this.#isDone) {
      this.#isDone = true;
      try {
        await this.#inner?.return?.();
      } finally {
        this.#endAttempt();
      }
    }
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** Starts an attempt (the first, or a retry) and reads its first part. */
  #attempt(): Promise<PartResult> {
    try {
      this.#startAttempt();
    } catch (error) {
      return this.#onFailure(error);
    }
    return this.#pull();
  }

  #startAttempt(): void {
    let signal = this.#signal;
    const idleTimeoutMs = this.#options.idleTimeoutMs;
    if (idleTimeoutMs > 0) {
      this.#controller = new AbortController();
      this.#signal.addEventListener("abort", this.#forwardAbort, { once: true });
      // One timer for the whole attempt, refreshed per part: a new one per part would cost an allocation and two list operations.
      this.#timer = setTimeout(this.#checkStalled, idleTimeoutMs);
      this.#timer.unref();
      signal = this.#controller.signal;
    }
    this.#inner = this.#model.stream(this.#request, { signal })[Symbol.asyncIterator]();
  }

  #pull(): Promise<PartResult> {
    this.#isWaiting = true;
    this.#timer?.refresh();
    let pending: Promise<PartResult>;
    try {
      pending = this.#inner!.next();
    } catch (error) {
      pending = Promise.reject(error);
    }
    return pending.then(this.#onResult, this.#onFailure);
  }

  readonly #onResult = (result: PartResult): PartResult => {
    this.#isWaiting = false;
    if (result.done) {
      this.#isDone = true;
      this.#endAttempt();
    } else {
      this.#hasStreamed = true;
    }
    return result;
  };

  readonly #onFailure = (error: unknown): Promise<PartResult> => {
    this.#isWaiting = false;
    this.#endAttempt();
    const isStall = this.#stalled !== undefined && this.#controller?.signal.reason === this.#stalled && !this.#signal.aborted;
    const failure = isStall ? this.#stalled : error;
    const retries = this.#options.retries;
    if (!retries) return this.#fail(failure);
    if (this.#signal.aborted) return this.#fail(this.#signal.reason);
    // Once anything was streamed a failure is final: a partial generation is never glued to a second one.
    if (this.#hasStreamed || !ModelError.isInstance(failure) || failure.kind !== "retryable" || this.#attempts >= retries.maxRetries) return this.#fail(failure);
    const backoff = Math.min(retries.maxDelayMs, retries.baseDelayMs * 2 ** this.#attempts * (0.8 + Math.random() * 0.4));
    const wait = Math.min(retries.maxDelayMs, Math.max(backoff, failure.retryAfterMs ?? 0));
    this.#attempts++;
    return abortableDelay(wait, this.#signal).then(() => this.#attempt(), this.#fail);
  };

  /** The stream ends with `error`. */
  readonly #fail = (error: unknown): Promise<PartResult> => {
    this.#isDone = true;
    return Promise.reject(error);
  };

  readonly #forwardAbort = (): void => this.#controller?.abort(this.#signal.reason);

  readonly #checkStalled = (): void => {
    if (!this.#isWaiting || this.#isDone) return;
    this.#stalled = new ModelError("retryable", `The model provider sent nothing for ${Math.round(this.#options.idleTimeoutMs / 1000)} s.`);
    this.#controller?.abort(this.#stalled);
  };

  #endAttempt(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#signal.removeEventListener("abort", this.#forwardAbort);
  }
}
