import type { ServerResponse } from "node:http";

/** Above this many characters queued, the batch goes out at once (a replay can queue a whole run in one turn). */
const MAX_BATCH_CHARS = 64 * 1024;

/**
 * Gathers the SSE text a compatibility stream writes within one turn of the event loop into one
 * socket write, as the native stream does (`streamRunEvents`): at full speed a run appends many
 * deltas per turn, and a socket write each costs more than framing them. Nothing waits longer
 * than that turn: the batch goes out in the `setImmediate` phase, as the native stream's does.
 *
 * `write` answers like `ServerResponse.write`: false while the socket is full, and the caller
 * waits for `drain` as it would without the batching.
 */
export class SseBatchWriter {
  readonly #response: ServerResponse;
  #pending = "";
  #immediate: NodeJS.Immediate | undefined;

  constructor(response: ServerResponse) {
    this.#response = response;
  }

  /** Queues `text` for this turn's write; false when the socket is full (wait for `drain`). */
  write(text: string): boolean {
    this.#pending += text;
    if (this.#pending.length >= MAX_BATCH_CHARS) this.flush();
    else this.#immediate ??= setImmediate(() => this.flush());
    return !this.#response.writableNeedDrain;
  }

  /** Writes what is queued now. */
  flush(): void {
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#immediate = undefined;
    const text = this.#pending;
    this.#pending = "";
    if (text !== "" && !this.#response.destroyed && !this.#response.writableEnded) this.#response.write(text);
  }

  /** Writes what is queued and ends the response. */
  end(): void {
    this.flush();
    if (!this.#response.writableEnded) this.#response.end();
  }

  /** Drops what is queued (the client has gone). */
  discard(): void {
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#immediate = undefined;
    this.#pending = "";
  }
}
