/**
 * What was sent of each answer and what the user has heard of it (DESIGN §12). Characters are
 * JavaScript string units, as a client counts them; an ack past what was sent is clamped.
 */
export class Playback {
  readonly #messages = new Map<string, { sent: string; heardChars: number }>();
  readonly #waiters = new Set<{ messageId: string; chars: number; resolve: () => void }>();
  /** Whether the client acknowledges playback; without acks, what was sent counts as heard. */
  #hasAcks: boolean;
  /** The answer being spoken: the last one with text sent. */
  #current: string | undefined;

  constructor(hasAcks: boolean) {
    this.#hasAcks = hasAcks;
  }

  get hasAcks(): boolean {
    return this.#hasAcks;
  }

  set hasAcks(value: boolean) {
    this.#hasAcks = value;
    this.#wake();
  }

  get current(): string | undefined {
    return this.#current;
  }

  /** Whether `messageId` had text sent. */
  knows(messageId: string): boolean {
    return this.#messages.has(messageId);
  }

  /** `text` of `messageId` was sent to the client. */
  sent(messageId: string, text: string): void {
    const message = this.#messages.get(messageId);
    if (message) message.sent += text;
    else this.#messages.set(messageId, { sent: text, heardChars: 0 });
    this.#current = messageId;
    this.#wake();
  }

  /** The client played `playedChars` of `messageId` (never backwards; clamped to what was sent). */
  ack(messageId: string, playedChars: number): void {
    const message = this.#messages.get(messageId);
    if (!message) return;
    message.heardChars = Math.max(message.heardChars, Math.min(playedChars, message.sent.length));
    this.#wake();
  }

  /** The characters of `messageId` sent so far. */
  sentChars(messageId: string): number {
    return this.#messages.get(messageId)?.sent.length ?? 0;
  }

  /** The characters of `messageId` the user heard. */
  heardChars(messageId: string): number {
    const message = this.#messages.get(messageId);
    if (!message) return 0;
    return this.#hasAcks ? message.heardChars : message.sent.length;
  }

  /** What the user heard of the current answer. */
  heard(): { messageId: string; content: string } | undefined {
    const messageId = this.#current;
    if (messageId === undefined) return undefined;
    return { messageId, content: this.#messages.get(messageId)!.sent.slice(0, this.heardChars(messageId)) };
  }

  /** Resolves once `chars` characters of `messageId` were heard; rejects when `signal` aborts. */
  untilHeard(messageId: string, chars: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.heardChars(messageId) >= chars) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = {
        messageId,
        chars,
        resolve: () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#waiters.delete(waiter);
        reject(signal.reason as Error);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.#waiters.add(waiter);
    });
  }

  #wake(): void {
    for (const waiter of this.#waiters) {
      if (this.heardChars(waiter.messageId) >= waiter.chars) {
        this.#waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }
}
