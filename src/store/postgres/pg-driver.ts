/**
 * The PostgreSQL driver of the SQL store: a pool; each statement text is parsed once per
 * connection (a named prepared statement, `?` → `$n` converted once); write transactions at READ
 * COMMITTED, run again when they lost a deadlock or a row insert a concurrent writer made first.
 */
import type pg from "pg";
import type { Row } from "../rows.js";
import type { SqlConnection, SqlDialect, SqlDriver, TransactionOptions } from "../sql/sql-driver.js";

/** Serialization failure and deadlock (two writers locking rows in opposite orders): run again. */
const RETRYABLE = new Set(["40001", "40P01"]);
const MAX_ATTEMPTS = 50;

const POSTGRES_DIALECT: SqlDialect = {
  name: "postgres",
  forUpdate: " FOR UPDATE",
  forUpdateSkipLocked: " FOR UPDATE SKIP LOCKED",
  insertionOrder: "seq",
  throughIndex: () => "",
  eventLogTable: "run_events",
};

/** Statement texts → names, so each connection parses a statement once (`?` → `$n` done once too). */
const preparedNames = new Map<string, { name: string; text: string }>();

function prepared(text: string): { name: string; text: string } {
  let entry = preparedNames.get(text);
  if (!entry) {
    let index = 0;
    let isQuoted = false;
    let converted = "";
    for (const char of text) {
      if (char === "'") isQuoted = !isQuoted;
      converted += char === "?" && !isQuoted ? `$${++index}` : char;
    }
    entry = { name: `tm${preparedNames.size}`, text: converted };
    preparedNames.set(text, entry);
  }
  return entry;
}

/** Statements on a pool (each on whichever connection is free) or on one client (a transaction's). */
function connectionOf(queryable: pg.Pool | pg.PoolClient, onQuery: () => void): SqlConnection {
  const query = (text: string, values: readonly unknown[]) => {
    onQuery();
    const { name, text: converted } = prepared(text);
    return queryable.query({ name, text: converted, values: values as unknown[] });
  };
  return {
    get: async (text, values) => (await query(text, values)).rows[0] as Row | undefined,
    all: async (text, values) => (await query(text, values)).rows as Row[],
    run: async (text, values) => ({ changes: (await query(text, values)).rowCount ?? 0 }),
  };
}

/** The PostgreSQL driver over `pool`; `close` ends the pool. */
export class PgDriver implements SqlDriver {
  readonly dialect = POSTGRES_DIALECT;
  readonly pool: pg.Pool;
  readonly connection: SqlConnection;
  /** Round trips to the server (statements, BEGIN and COMMIT included), for benchmarks. */
  roundTrips = 0;

  constructor(pool: pg.Pool) {
    this.pool = pool;
    this.connection = connectionOf(pool, () => this.roundTrips++);
  }

  async transaction<T>(fn: (connection: SqlConnection) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    const begin = options.readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN ISOLATION LEVEL READ COMMITTED";
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect();
      let isBroken = false;
      // A connection lost mid-transaction (a database restart) fails the statement in flight; the
      // client also emits `error`, which, unheard while it is checked out, would end the process.
      const onLost = (): void => {
        isBroken = true;
      };
      client.on("error", onLost);
      try {
        this.roundTrips++;
        await client.query(begin);
        const result = await fn(connectionOf(client, () => this.roundTrips++));
        this.roundTrips++;
        await client.query("COMMIT");
        return result;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {
          isBroken = true;
        });
        const code = (error as { code?: unknown }).code;
        const constraint = (error as { constraint?: unknown }).constraint;
        const isLostInsert = code === "23505" && typeof constraint === "string" && options.rerunOnConflictWith?.includes(constraint) === true;
        if (typeof code !== "string" || !(RETRYABLE.has(code) || isLostInsert) || attempt >= MAX_ATTEMPTS) throw error;
      } finally {
        client.off("error", onLost);
        client.release(isBroken);
      }
      // A short random pause spreads the writers that collided.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
