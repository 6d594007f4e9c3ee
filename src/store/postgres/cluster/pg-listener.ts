/** One dedicated connection that LISTENs on the cluster's channels and reconnects when it drops. */
import pg from "pg";
import type { Logger } from "../../../core/logger.js";

export interface PgListenerOptions {
  url: string;
  channels: readonly string[];
  onNotification(channel: string, payload: string): void;
  /** After a reconnect: notifications may have been missed meanwhile. */
  onReconnect(): void;
  logger: Logger;
}

export class PgListener {
  readonly #options: PgListenerOptions;
  #client: pg.Client | undefined;
  #isClosed = false;
  #retryTimer: NodeJS.Timeout | undefined;

  constructor(options: PgListenerOptions) {
    this.#options = options;
  }

  /** Connects and listens; rejects if the first connection fails. */
  async start(): Promise<void> {
    await this.#connect();
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#options.url });
    client.on("notification", (message) => this.#options.onNotification(message.channel, message.payload ?? ""));
    client.on("error", (error) => this.#lost(client, error));
    client.on("end", () => this.#lost(client, new Error("connection ended")));
    await client.connect();
    for (const channel of this.#options.channels) await client.query(`LISTEN ${channel}`);
    if (this.#isClosed) {
      await client.end();
      return;
    }
    this.#client = client;
  }

  #lost(client: pg.Client, error: Error): void {
    if (this.#isClosed || this.#client !== client) return;
    this.#client = undefined;
    this.#options.logger.warn({ error: error.message }, "the LISTEN connection was lost; reconnecting");
    client.end().catch(() => undefined);
    this.#scheduleReconnect(100);
  }

  #scheduleReconnect(delayMs: number): void {
    this.#retryTimer = setTimeout(() => {
      this.#connect().then(
        () => this.#options.onReconnect(),
        (error: unknown) => {
          this.#options.logger.warn({ error: String(error) }, "LISTEN reconnect failed");
          if (!this.#isClosed) this.#scheduleReconnect(Math.min(delayMs * 2, 5_000));
        },
      );
    }, delayMs);
    this.#retryTimer.unref();
  }

  async close(): Promise<void> {
    this.#isClosed = true;
    clearTimeout(this.#retryTimer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }
}
