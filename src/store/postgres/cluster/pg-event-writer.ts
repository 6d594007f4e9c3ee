/**
 * Appends the events this process emits to `run_events`, in order, many per statement: while one
 * insert is in flight the next batch gathers (group commit), so the cost per event falls as the
 * rate rises. The insert wakes the API processes with one NOTIFY: a small batch carries its events
 * (the API processes append them without reading the log back), a larger one names its runs.
 * A batch the database refuses (it is away, or restarting) is tried again until it is written,
 * and the batches behind it wait: a follower waits at the first missing seq, so an event given
 * up on would hold every later one of its run back from the other processes for ever.
 *
 * One writer per run (decision 006), even across an outage: while this process could not reach
 * the database, it may have lost a run (self-fenced) to another process that recovered it from
 * the log as it stood, and wrote on, perhaps to its terminal event. A batch therefore writes a
 * run's events only if the log holds no other event at or after the batch's first seq for that
 * run; otherwise that run's attempt is superseded here, and every event of it this process still
 * has or emits later is dropped.
 */
import type pg from "pg";
import type { RunEvent } from "../../../core/index.js";
import type { Logger } from "../../../core/logger.js";
import { attemptOfSeq } from "../../../stream/index.js";

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

const attemptKey = (tenantId: string, runId: string, seq: number): string => `${tenantId}\u0000${runId}\u0000${attemptOfSeq(seq)}`;

export class PgEventWriter {
  readonly #pool: pg.Pool;
  readonly #channel: string;
  readonly #logger: Logger;
  #pending: PendingEvent[] = [];
  #flushing: Promise<void> | undefined;
  #isClosing = false;
  /** Run attempts another process wrote while this one could not (one entry per run lost that way). */
  readonly #superseded = new Set<string>();

  constructor(pool: pg.Pool, channel: string, logger: Logger) {
    this.#pool = pool;
    this.#channel = channel;
    this.#logger = logger;
  }

  push(tenantId: string, event: RunEvent): void {
    if (this.#superseded.size > 0 && this.#superseded.has(attemptKey(tenantId, event.run_id, event.seq))) return;
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
        // `taken`: the runs whose log holds an event at or after this batch's first one for it
        // that is not this batch's own (a retried batch that committed finds only its own). The
        // NOTIFY carries the events only when every one was written; otherwise it names the runs,
        // and the followers read the log.
        const result = await this.#pool.query<{ written: number; taken: [string, string][] | null }>(
          `WITH incoming AS (
             SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[]) AS i(tenant_id, run_id, seq, event, at)),
           taken AS (
             SELECT f.tenant_id, f.run_id FROM (SELECT tenant_id, run_id, min(seq) AS first_seq FROM incoming GROUP BY tenant_id, run_id) AS f
             WHERE EXISTS (
               SELECT 1 FROM run_events e
               WHERE e.tenant_id = f.tenant_id AND e.run_id = f.run_id AND e.seq >= f.first_seq
                 AND NOT EXISTS (SELECT 1 FROM incoming i WHERE i.tenant_id = e.tenant_id AND i.run_id = e.run_id AND i.seq = e.seq AND i.event = e.event))),
           written AS (
             INSERT INTO run_events (tenant_id, run_id, seq, event, at)
             SELECT i.tenant_id, i.run_id, i.seq, i.event, i.at FROM incoming i
             WHERE NOT EXISTS (SELECT 1 FROM taken t WHERE t.tenant_id = i.tenant_id AND t.run_id = i.run_id)
             ON CONFLICT DO NOTHING RETURNING 1)
           SELECT pg_notify($6, CASE WHEN counted.count = $8 THEN $7 ELSE $9 END), counted.count AS written,
             (SELECT json_agg(json_build_array(tenant_id, run_id)) FROM taken) AS taken
           FROM (SELECT count(*)::int AS count FROM written) AS counted`,
          [
            batch.map((event) => event.tenantId),
            batch.map((event) => event.runId),
            batch.map((event) => event.seq),
            batch.map((event) => event.json),
            batch.map((event) => event.at),
            this.#channel,
            payload,
            batch.length,
            runsPayload(batch),
          ],
        );
        const taken = result.rows[0]?.taken ?? [];
        if (taken.length > 0) this.#supersede(batch, taken);
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

  /** Another process wrote these runs' logs: this process drops their attempts' events, queued and to come. */
  #supersede(batch: readonly PendingEvent[], taken: readonly [string, string][]): void {
    const runs = new Set(taken.map(([tenantId, runId]) => `${tenantId}\u0000${runId}`));
    let dropped = 0;
    for (const event of batch) {
      if (!runs.has(`${event.tenantId}\u0000${event.runId}`)) continue;
      this.#superseded.add(attemptKey(event.tenantId, event.runId, event.seq));
      dropped++;
    }
    const queued = this.#pending.length;
    this.#pending = this.#pending.filter((event) => !this.#superseded.has(attemptKey(event.tenantId, event.runId, event.seq)));
    dropped += queued - this.#pending.length;
    this.#logger.warn({ run_ids: taken.map(([, runId]) => runId), events: dropped }, "events not written: another process wrote their run's log meanwhile");
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
  return runsPayload(batch);
}

/** The NOTIFY that names a batch's runs (or says "every run"): their followers read the log. */
function runsPayload(batch: readonly PendingEvent[]): string {
  const runs = [...new Set(batch.map((event) => event.runId))].join(",");
  return runs.length <= MAX_PAYLOAD ? runs : "*";
}
