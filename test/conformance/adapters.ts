/**
 * The adapters the conformance suite runs against: every contract test runs once per adapter.
 *
 * `TIDEMARK_TEST_STORES` (a comma-separated list, e.g. `sqlite`) narrows the list; by default
 * both run. PostgreSQL is imported on first use, so a SQLite-only run never loads `pg`.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createSqliteStore } from "../../src/store/sqlite/index.js";
import type { Store } from "../../src/store/store.js";

export type AdapterName = "sqlite" | "postgres";

/** Several stores on one database, as separate processes would hold them. */
export interface SharedStores {
  stores: Store[];
  /** Closes every store and removes the database. */
  dispose(): Promise<void>;
}

export interface StoreAdapter {
  name: AdapterName;
  /** A new, empty store of its own; `close` also removes what it created. */
  create(): Promise<Store>;
  /** `count` stores, each with its own connection(s), on one new, empty database. */
  openShared(count: number): Promise<SharedStores>;
  /**
   * Every row of every table of a store made by {@link create}, counted through another
   * connection; absent where that is impossible (an in-memory SQLite database).
   */
  countRows?(store: Store): Promise<number>;
}

const postgresModules = async () => {
  const [testing, postgres] = await Promise.all([
    import("../../src/testing/postgres-test-database.js"),
    import("../../src/store/postgres/index.js"),
  ]);
  return { ...testing, ...postgres };
};

/** The schema of each store made by the PostgreSQL adapter's `create`. */
const schemas = new WeakMap<Store, string>();

const sqlite: StoreAdapter = {
  name: "sqlite",
  async create() {
    return createSqliteStore({ path: ":memory:" });
  },
  async openShared(count) {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "tidemark-shared-"));
    const file = path.join(directory, "store.db");
    const stores = Array.from({ length: count }, () => createSqliteStore({ path: file, checkpointIntervalMs: 0 }));
    return {
      stores,
      async dispose() {
        await Promise.all(stores.map((store) => store.close()));
        fs.rmSync(directory, { recursive: true, force: true });
      },
    };
  },
};

const postgres: StoreAdapter = {
  name: "postgres",
  async create() {
    const { createTestPostgresStore } = await postgresModules();
    const store = await createTestPostgresStore();
    schemas.set(store, store.schema);
    return store;
  },
  async openShared(count) {
    const { createPostgresStore, dropTestSchema, newTestSchemaName, TEST_PG_URL } = await postgresModules();
    const schema = newTestSchemaName("tm_shared");
    // The first store creates the schema and migrates it; the others only connect.
    const stores = [await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 5 })];
    try {
      for (let index = 1; index < count; index++) stores.push(await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 5 }));
    } catch (error) {
      await Promise.all(stores.map((store) => store.close()));
      await dropTestSchema(schema);
      throw error;
    }
    return {
      stores,
      async dispose() {
        await Promise.all(stores.map((store) => store.close()));
        await dropTestSchema(schema);
      },
    };
  },
  async countRows(store) {
    const schema = schemas.get(store);
    if (!schema) throw new Error("countRows: not a store made by this adapter's create()");
    const { TEST_PG_URL } = await postgresModules();
    const { default: pg } = await import("pg");
    const client = new pg.Client({ connectionString: TEST_PG_URL });
    await client.connect();
    try {
      const { rows: tables } = await client.query<{ table_name: string }>(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'",
        [schema],
      );
      let total = 0;
      for (const { table_name: table } of tables) {
        const { rows } = await client.query<{ n: string }>(`SELECT COUNT(*) AS n FROM "${schema}"."${table}"`);
        total += Number(rows[0]!.n);
      }
      return total;
    } finally {
      await client.end();
    }
  },
};

function selected(): StoreAdapter[] {
  const wanted = process.env.TIDEMARK_TEST_STORES?.split(",").map((name) => name.trim()).filter(Boolean);
  const all = [sqlite, postgres];
  if (!wanted || wanted.length === 0) return all;
  const unknown = wanted.filter((name) => !all.some((adapter) => adapter.name === name));
  if (unknown.length > 0) throw new Error(`TIDEMARK_TEST_STORES: unknown adapter(s) ${unknown.join(", ")}`);
  return all.filter((adapter) => wanted.includes(adapter.name));
}

/** The adapters to run, in a stable order. */
export const adapters: readonly StoreAdapter[] = selected();
