import { openOutboxTable, type OutboxRow } from "../store/sqlite/outbox-table.js";

/**
 * A tiny persisted "external system" for the demo email tool: an outbox table in a SQLite file.
 *
 * It deliberately has no unique constraint on the idempotency key. Deduplication is the
 * operation ledger's job (DESIGN §6), so a duplicate send shows up here as a second row, where a
 * test (or a curious user) can count it.
 *
 * @example
 * const outbox = createDemoOutbox("tidemark.db");
 * const { message_id } = await outbox.send({ to: "ana@example.com", subject: "Hi", body: "…", idempotencyKey: "email:t1:ab12" });
 * outbox.findByKey("email:t1:ab12"); // → the stored row
 * outbox.close();
 */

/** An email as the outbox accepts it. */
export interface OutboxMessage {
  to: string;
  subject: string;
  body: string;
}

/** What the outbox answers for an accepted send (snake_case: it is the external system's wire shape). */
export interface OutboxReceipt {
  message_id: string;
  /** Epoch milliseconds. */
  sent_at: number;
}

/** One stored send. */
export interface OutboxRecord extends OutboxMessage, OutboxReceipt {
  seq: number;
  idempotencyKey: string;
}

/** Options for {@link createDemoOutbox}. */
export interface DemoOutboxOptions {
  /** How long each `send` takes before it is stored (default 0): the window in which a Stop can arrive. */
  sendDelayMs?: number;
}

/** The demo outbox: send, look up by key, list, count, close. */
export interface DemoOutbox {
  /**
   * Sends a message. A signal already aborted refuses the send; once the send has started it
   * completes even if the signal aborts, like a request already handed to a real mail server.
   */
  send(message: OutboxMessage & { idempotencyKey: string }, options?: { signal?: AbortSignal }): Promise<OutboxReceipt>;
  /** The first send stored under `idempotencyKey`, if any. */
  findByKey(idempotencyKey: string): OutboxRecord | undefined;
  /** Every stored send, oldest first. */
  list(): OutboxRecord[];
  /** How many sends each key has (for tests: more than 1 is a duplicate action). */
  countByKey(): Record<string, number>;
  /** Closes the connection; a send still in its delay then fails. */
  close(): void;
}

/** Opens (and creates if needed) the demo outbox in the SQLite file at `path`; its own connection. */
export function createDemoOutbox(path: string, options: DemoOutboxOptions = {}): DemoOutbox {
  const table = openOutboxTable(path);
  const sendDelayMs = options.sendDelayMs ?? 0;
  return {
    async send(message, sendOptions = {}) {
      sendOptions.signal?.throwIfAborted();
      // Deliberately not abortable: a send handed over completes.
      if (sendDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, sendDelayMs));
      const sentAt = Date.now();
      const seq = await table.insert({ idempotency_key: message.idempotencyKey, recipient: message.to, subject: message.subject, body: message.body, sent_at: sentAt });
      return { message_id: `out_${seq}`, sent_at: sentAt };
    },
    findByKey(idempotencyKey) {
      const row = table.findByKey(idempotencyKey);
      return row ? toRecord(row) : undefined;
    },
    list: () => table.list().map(toRecord),
    countByKey: () => table.countByKey(),
    close: () => table.close(),
  };
}

function toRecord(row: OutboxRow): OutboxRecord {
  return {
    seq: row.seq,
    idempotencyKey: row.idempotency_key,
    to: row.recipient,
    subject: row.subject,
    body: row.body,
    message_id: `out_${row.seq}`,
    sent_at: row.sent_at,
  };
}
