/**
 * A database restart closes every connection: idle ones in the pool, and one a transaction holds.
 * Either makes the connection's client emit `error`; unheard, that event ended every Tidemark
 * process on PostgreSQL (found by test/chaos-pg-outage.test.ts). Now an idle connection's loss is
 * logged, a transaction's fails that transaction only, and the next query opens a new connection.
 */
import pg from "pg";
import { afterEach, expect, it } from "vitest";
import type { Logger } from "../../core/logger.js";
import { dropTestSchema, newTestSchemaName, TEST_PG_URL } from "../../testing/postgres-test-database.js";
import { PgDriver } from "./pg-driver.js";
import { createPool } from "./postgres-store.js";

const schema = newTestSchemaName("tm_pglost");
let pool: pg.Pool | undefined;

afterEach(async () => {
  await pool?.end();
  pool = undefined;
  await dropTestSchema(schema);
});

/** What a restart does to a session: the server ends it. */
async function terminateBackend(pid: number): Promise<void> {
  const admin = new pg.Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  try {
    await admin.query("SELECT pg_terminate_backend($1)", [pid]);
  } finally {
    await admin.end();
  }
}

const pidOf = async (queryable: { query: pg.Pool["query"] }): Promise<number> =>
  (await queryable.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;

it("a pooled connection the server closes while idle is logged and replaced", async () => {
  let onWarned!: (fields: Record<string, unknown>) => void;
  const warned = new Promise<Record<string, unknown>>((resolve) => (onWarned = resolve));
  const logger: Logger = { info: () => {}, error: () => {}, warn: (fields) => onWarned(fields) };
  pool = createPool({ url: TEST_PG_URL, schema, poolSize: 1, logger });
  const pid = await pidOf(pool);
  await terminateBackend(pid);
  expect(await warned).toMatchObject({ error: expect.any(String) });
  expect(await pidOf(pool)).not.toBe(pid);
}, 10_000);

it("a connection the server closes during a transaction fails that transaction, and the next one works", async () => {
  pool = createPool({ url: TEST_PG_URL, schema, poolSize: 1 });
  const driver = new PgDriver(pool);
  let lostPid: number | undefined;
  const lost = driver.transaction(async (connection) => {
    lostPid = Number((await connection.get("SELECT pg_backend_pid() AS pid", []))!.pid);
    await terminateBackend(lostPid);
    return connection.get("SELECT 1 AS one", []);
  });
  await expect(lost).rejects.toThrow();
  const next = await driver.transaction(async (connection) => Number((await connection.get("SELECT pg_backend_pid() AS pid", []))!.pid));
  expect(next).not.toBe(lostPid);
}, 10_000);
