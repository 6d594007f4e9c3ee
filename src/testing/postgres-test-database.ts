/**
 * PostgreSQL for tests: `TIDEMARK_TEST_PG_URL` (default the local `test` database), and a schema
 * of its own per store, dropped when the test is done, so parallel test files never meet.
 */
import { createId } from "../core/index.js";
import { createPool, createPostgresStore } from "../store/postgres/index.js";
import type { Store } from "../store/index.js";

export const TEST_PG_URL = process.env.TIDEMARK_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** A fresh schema name (lowercase, unique per call). */
export function newTestSchemaName(prefix = "tm_test"): string {
  return `${prefix}_${createId("run").slice(4)}`.toLowerCase();
}

/** Drops a test schema and everything in it. */
export async function dropTestSchema(schema: string, url = TEST_PG_URL): Promise<void> {
  const pool = createPool({ url, poolSize: 1 });
  try {
    await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await pool.end();
  }
}

/** A PostgreSQL store in a new schema; `close` closes it and drops the schema. */
export async function createTestPostgresStore(options: { poolSize?: number } = {}): Promise<Store & { schema: string }> {
  const schema = newTestSchemaName();
  // Small pools: many test files share one server's max_connections (100 by default).
  const store = await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: options.poolSize ?? 4 });
  const close = store.close.bind(store);
  return Object.assign(store, {
    schema,
    async close() {
      await close();
      await dropTestSchema(schema);
    },
  });
}
