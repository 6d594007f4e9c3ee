/** The PostgreSQL store: a pool on one database (its own schema when named), migrated, under the SQL store. */
import pg from "pg";
import { ConfigurationError } from "../../core/index.js";
import type { Logger } from "../../core/logger.js";
import type { Store } from "../store.js";
import { SqlStore } from "../sql/sql-store.js";
import { assertCurrentSchema } from "./assert-current-schema.js";
import { migrate } from "./migrations.js";
import { PgDriver } from "./pg-driver.js";

/** Options for {@link createPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user@host:port/database`. */
  url: string;
  /** A schema of its own (created if missing), e.g. one per test; default the connection's search_path. */
  schema?: string;
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /**
   * Connections kept open while idle, opened at start (default 3, at most `poolSize`): a Stop after
   * a quiet spell must not wait for new connections (the pool closes others after 10 s idle).
   */
  warmConnections?: number;
  /**
   * Reads an existing Tidemark schema only (`tidemark check`): creates and migrates nothing,
   * refuses a schema that is missing, holds no Tidemark tables or is at another migration version,
   * and runs every session read-only.
   */
  readOnly?: boolean;
  /** Told when the server closes an idle pooled connection (a database restart); default silent. */
  logger?: Logger;
}

/** int8 (BIGINT, COUNT) as a JavaScript number: every value here is a time, a count or a version, far below 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: "text" | "binary") =>
    oid === 20 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

const DEFAULT_WARM_CONNECTIONS = 3;

/** Connects a pool to the database (in its own schema when one is named). */
export function createPool(options: PostgresStoreOptions): pg.Pool {
  if (options.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(options.schema)) {
    throw new ConfigurationError(`Not a schema name: ${options.schema}`, { setting: "--schema" });
  }
  const max = options.poolSize ?? 10;
  const pool = new pg.Pool({
    connectionString: options.url,
    max,
    min: Math.min(options.warmConnections ?? DEFAULT_WARM_CONNECTIONS, max),
    types: TYPES,
    options: [options.schema ? `-c search_path=${options.schema}` : "", options.readOnly ? "-c default_transaction_read_only=on" : ""]
      .filter(Boolean)
      .join(" ") || undefined,
  });
  // A restarting database closes every connection, idle ones too: the pool drops them and the next
  // query opens a new one. Without a listener, the pool's `error` event would end the process.
  pool.on("error", (error) => options.logger?.warn({ error: error.message }, "an idle database connection was closed; the next query opens a new one"));
  return pool;
}

/**
 * The scaled store: one PostgreSQL database shared by every API and worker process. Migrations
 * run under an advisory lock, so processes that start together apply them once.
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const pool = createPool(options);
  if (options.readOnly) {
    await assertCurrentSchema(pool, options.schema).catch(async (error: unknown) => {
      await pool.end();
      throw error;
    });
    return new SqlStore(new PgDriver(pool));
  }
  try {
    if (options.schema) {
      // Processes that start together race to create it: the loser finds it there.
      await pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`).catch((error: { code?: string }) => {
        if (error.code !== "23505" && error.code !== "42P06") throw error;
      });
    }
    await migrate(pool);
    await openWarmConnections(pool);
  } catch (error) {
    await pool.end();
    throw error;
  }
  return new SqlStore(new PgDriver(pool));
}

/** Opens the pool's warm connections now (it keeps `min` open, but only opens them on demand). */
export async function openWarmConnections(pool: pg.Pool): Promise<void> {
  const clients = await Promise.all(Array.from({ length: pool.options.min ?? 0 }, () => pool.connect()));
  for (const client of clients) client.release();
}
