import pg from "pg";
import { dropTestSchema, newTestSchemaName, TEST_PG_URL } from "../src/testing/postgres-test-database.js";

/** The benchmarks' PostgreSQL: the test server, one schema per benchmark run (`tm_bench_…`). */

/** A fresh schema name for one benchmark run. */
export function newBenchSchemaName(): string {
  return newTestSchemaName("tm_bench");
}

/** Drops a benchmark's schema; a failure is logged, not thrown, so it cannot hide the figures. */
export async function dropBenchSchema(schema: string, log: (message: string) => void): Promise<void> {
  await dropTestSchema(schema).catch((error: unknown) => log(`could not drop ${schema}: ${String(error)}`));
}

/** Runs `use` on a connection of its own to the test database, closed afterwards. */
export async function withBenchDatabase<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
