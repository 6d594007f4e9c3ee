/**
 * The SQLite driver of the SQL store: one better-sqlite3 connection behind a mutex that covers
 * every statement on it. better-sqlite3 is synchronous, but the SQL store's transactions await
 * between their statements; without the mutex, a statement issued meanwhile by another caller
 * would run inside that open transaction (and see its uncommitted rows, or be rolled back with
 * it). Write transactions are `BEGIN IMMEDIATE`: the file's write lock is taken before the first
 * read, so writers on other connections wait instead of failing midway. They wait without
 * blocking the event loop: SQLite's own busy wait is off, and a busy lock is tried again after
 * a pause, so another connection in this process (a test's second store) can finish meanwhile.
 */
import type Database from "better-sqlite3";
import type { Row } from "../rows.js";
import type { SqlConnection, SqlDialect, SqlDriver, TransactionOptions } from "../sql/sql-driver.js";

/** SQLite has one writer at a time: a write transaction already excludes every other, so no row locks. */
const SQLITE_DIALECT: SqlDialect = {
  name: "sqlite",
  forUpdate: "",
  forUpdateSkipLocked: "",
  insertionOrder: "rowid",
  throughIndex: (index) => ` INDEXED BY ${index}`,
  eventLogTable: null,
};

/** How long a writer waits for another connection's write lock before it fails. */
const BUSY_TIMEOUT_MS = 5_000;

/** better-sqlite3 binds no `undefined` and no booleans: they become NULL and 0/1. */
function bindable(values: readonly unknown[]): unknown[] {
  return values.map((value) => (value === undefined ? null : typeof value === "boolean" ? Number(value) : value));
}

/** What a store closes with its connection: before it (the WAL checkpointer), after it (the file lock). */
export interface SqliteDriverHooks {
  beforeClose?(): Promise<void>;
  afterClose?(): void;
}

/** The SQLite driver over an open connection; `close` closes it, with the store's hooks around. */
export class SqliteDriver implements SqlDriver {
  readonly dialect = SQLITE_DIALECT;
  readonly db: Database.Database;
  readonly connection: SqlConnection;
  readonly #statements = new Map<string, Database.Statement>();
  readonly #hooks: SqliteDriverHooks;
  #isLocked = false;
  readonly #waiters: (() => void)[] = [];
  /** Statements straight on the connection: only for the holder of the mutex. */
  readonly #direct: SqlConnection = {
    get: async (text, values) => this.#statement(text).get(...bindable(values)) as Row | undefined,
    all: async (text, values) => this.#statement(text).all(...bindable(values)) as Row[],
    run: async (text, values) => ({ changes: this.#statement(text).run(...bindable(values)).changes }),
  };

  constructor(db: Database.Database, hooks: SqliteDriverHooks = {}) {
    this.db = db;
    this.#hooks = hooks;
    db.pragma("busy_timeout = 0");
    this.connection = {
      get: (text, values) => this.#exclusive(() => this.#direct.get(text, values)),
      all: (text, values) => this.#exclusive(() => this.#direct.all(text, values)),
      // A write outside a transaction takes the write lock too.
      run: (text, values) => this.#exclusive(() => whenNotBusy(() => this.#direct.run(text, values))),
    };
  }

  async transaction<T>(fn: (connection: SqlConnection) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.#exclusive(async () => {
      const begin = this.#statement(options.readOnly ? "BEGIN DEFERRED" : "BEGIN IMMEDIATE");
      await whenNotBusy(async () => begin.run());
      try {
        const result = await fn(this.#direct);
        const commit = this.#statement("COMMIT");
        await whenNotBusy(async () => commit.run());
        return result;
      } catch (error) {
        // A failed COMMIT (or SQLite itself) may already have ended the transaction.
        if (this.db.inTransaction) this.#statement("ROLLBACK").run();
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    // The last holder finishes first: nothing is cut off mid-transaction.
    await this.#exclusive(async () => {
      await this.#hooks.beforeClose?.();
      if (this.db.open) this.db.close();
      this.#hooks.afterClose?.();
    });
  }

  /** Runs `work` holding the mutex; at once (no queue) when nobody holds it. */
  async #exclusive<T>(work: () => Promise<T>): Promise<T> {
    if (this.#isLocked) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    else this.#isLocked = true;
    try {
      return await work();
    } finally {
      const next = this.#waiters.shift();
      if (next) next();
      else this.#isLocked = false;
    }
  }

  /** A prepared statement, cached by its text. */
  #statement(text: string): Database.Statement {
    let statement = this.#statements.get(text);
    if (!statement) {
      statement = this.db.prepare(text);
      this.#statements.set(text, statement);
    }
    return statement;
  }
}

/** Runs `attempt`; while another connection holds the write lock, tries again after a short pause. */
export async function whenNotBusy<T>(attempt: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== "string" || !code.startsWith("SQLITE_BUSY") || Date.now() >= deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(20, 2 ** tries) * (0.5 + Math.random() / 2)));
  }
}
