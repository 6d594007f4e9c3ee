/**
 * The demo outbox's table (the stand-in for an external mail system, src/tools/demo-outbox.ts) in
 * a SQLite file, usually the store's own. Its connection never waits for the store's write lock
 * with SQLite's blocking busy wait: that would stall the event loop while the store's transaction,
 * which holds the lock across awaits, could not finish. It tries again after a pause instead.
 */
import Database from "better-sqlite3";
import { whenNotBusy } from "./sqlite-driver.js";

/** One stored send, as the table holds it. */
export interface OutboxRow {
  seq: number;
  idempotency_key: string;
  recipient: string;
  subject: string;
  body: string;
  sent_at: number;
}

/** The outbox's statements. */
export interface OutboxTable {
  /** Stores a send; its `seq`. */
  insert(row: Omit<OutboxRow, "seq">): Promise<number>;
  findByKey(idempotencyKey: string): OutboxRow | undefined;
  list(): OutboxRow[];
  countByKey(): Record<string, number>;
  close(): void;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS demo_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    idempotency_key TEXT NOT NULL,
    recipient TEXT,
    subject TEXT,
    body TEXT,
    sent_at INTEGER
  );
  CREATE INDEX IF NOT EXISTS demo_outbox_by_key ON demo_outbox (idempotency_key);
`;

/** Opens (and creates if needed) the outbox table in the SQLite file at `path`, on its own connection. */
export function openOutboxTable(path: string): OutboxTable {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  // At open, nothing else of this process holds the lock yet: a short blocking wait is safe here.
  db.pragma("busy_timeout = 5000");
  db.exec(SCHEMA);
  db.pragma("busy_timeout = 0");
  const insert = db.prepare("INSERT INTO demo_outbox (idempotency_key, recipient, subject, body, sent_at) VALUES (?, ?, ?, ?, ?)");
  const selectByKey = db.prepare("SELECT * FROM demo_outbox WHERE idempotency_key = ? ORDER BY seq LIMIT 1");
  const selectAll = db.prepare("SELECT * FROM demo_outbox ORDER BY seq");
  const selectCounts = db.prepare("SELECT idempotency_key, COUNT(*) AS count FROM demo_outbox GROUP BY idempotency_key");
  return {
    async insert(row) {
      const { lastInsertRowid } = await whenNotBusy(async () => insert.run(row.idempotency_key, row.recipient, row.subject, row.body, row.sent_at));
      return Number(lastInsertRowid);
    },
    findByKey: (idempotencyKey) => selectByKey.get(idempotencyKey) as OutboxRow | undefined,
    list: () => selectAll.all() as OutboxRow[],
    countByKey() {
      const rows = selectCounts.all() as { idempotency_key: string; count: number }[];
      return Object.fromEntries(rows.map((row) => [row.idempotency_key, row.count]));
    },
    close: () => db.close(),
  };
}
