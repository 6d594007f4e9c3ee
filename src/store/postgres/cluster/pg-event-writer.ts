/**
 * Appends the events this process emits to `run_events`, in order, many per statement: while one
 * insert is in flight the next batch gathers (group commit), so the cost per event falls as the
 * rate rises. The insert wakes the API processes with one NOTIFY: a small batch carries its events
 * (the API processes append them without reading the log back), a larger one names its runs.
 * A batch the database refuses (it is away, or restarting) is tried again until it is written,
 * and the batches behind it wait: a follower waits at the first missing seq, so an event given
 * up on would hold every later one of its run back from the other processes for ever.
 */
import type pg from "pg";
import type { RunEvent } from "../../../core/index.js";
import type { Logger } from "../../../core/logger.js";

interface PendingEvent {
  tenantId: string;
  runId: string;
  seq: number;
  json: string;
  at: number;
}

/** A NOTIFY payload must stay under 8000 bytes; past this it names the runs, or says "every run". */
const MAX_PAYLOAD = 7_000;
const MAX_BATCH = 2_000;
/** The pause between two tries of a batch grows to this. */
const MAX_RETRY_DELAY_MS = 1_000;
/** Once closing, a batch is given up after this many tries (the process is going away). */
const ATTEMPTS_WHEN_CLOSING = 5;

export class PgEventWriter {
  readonly #pool: pg.Pool;
  readonly #channel: string;
  readonly #logger: Logger;
  #pending: PendingEvent[] = [];
  #flushing: Promise<void> | undefined;
  #isClosing = false;

  constructor(pool: pg.Pool, channel: string, logger: Logger) {
    this.#pool = pool;
    this.#channel = channel;
    this.#logger = logger;
  }

  push(tenantId: string, event: RunEvent): void {
    this.#pending.push({ tenantId, runId: event.run_id, seq: event.seq, json: JSON.stringify(event), at: Date.now() });
    this.#flushing ??= this.#drain().finally(() => (this.#flushing = undefined));
  }

  /** Resolves once everything pushed so far is written (or, since this is the close, given up on). */
  async flush(): Promise<void> {
    this.#isClosing = true;
    while (this.#flushing) await this.#flushing;
  }

  async #drain(): Promise<void> {
    // One turn first, so the events of this tick travel together.
    await new Promise(setImmediate);
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, MAX_BATCH);
      await this.#write(batch);
    }
  }

  async #write(batch: PendingEvent[]): Promise<void> {
    const payload = notifyPayload(batch);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#pool.query(
          `WITH written AS (
             INSERT INTO run_events (tenant_id, run_id, seq, event, at)
             SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
             ON CONFLICT DO NOTHING RETURNING 1)
           SELECT pg_notify($6, $7) FROM (SELECT count(*) FROM written) AS counted`,
          [
            batch.map((event) => event.tenantId),
            batch.map((event) => event.runId),
            batch.map((event) => event.seq),
            batch.map((event) => event.json),
            batch.map((event) => event.at),
            this.#channel,
            payload,
          ],
        );
        if (attempt > 1) this.#logger.info({ events: batch.length, attempts: attempt }, "events written to the shared log again");
        return;
      } catch (error) {
        // Other API processes would wait at the missing seqs for ever: try again until written.
        if (this.#isClosing && attempt >= ATTEMPTS_WHEN_CLOSING) {
          this.#logger.error({ error: String(error), events: batch.length }, "events could not be written to the shared log");
          return;
        }
        if (attempt === 1) this.#logger.warn({ error: String(error), events: batch.length }, "events could not be written to the shared log yet; retrying");
        await new Promise((resolve) => setTimeout(resolve, Math.min(MAX_RETRY_DELAY_MS, 50 * attempt)));
      }
    }
  }
}

/**
 * What the NOTIFY of a written batch says (read by `PgEventFollower.wake`): the events themselves,
 * `{"events":[[tenant, run, seq, json], …]}`, when they fit; otherwise the run ids, comma-separated,
 * or "*".
 */
function notifyPayload(batch: readonly PendingEvent[]): string {
  let bytes = 0;
  for (const event of batch) {
    bytes += event.json.length;
    if (bytes > MAX_PAYLOAD) break;
  }
  if (bytes <= MAX_PAYLOAD) {
    const inline = JSON.stringify({ events: batch.map((event) => [event.tenantId, event.runId, event.seq, event.json]) });
    if (Buffer.byteLength(inline) <= MAX_PAYLOAD) return inline;
  }
  const runs = [...new Set(batch.map((event) => event.runId))].join(",");
  return runs.length <= MAX_PAYLOAD ? runs : "*";
}
