/** Applies the PostgreSQL schema's migrations, once, however many processes start together. */
import type pg from "pg";
import { PG_MIGRATIONS } from "./schema.js";

/** Applies every migration newer than the database's version; returns the resulting version. */
export async function migrate(pool: pg.Pool): Promise<number> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    // Concurrent starters wait here; the second finds the work done.
    await client.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.tidemark_migrate'))");
    await client.query(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
    );
    const { rows } = await client.query<{ version: number | null }>("SELECT MAX(version) AS version FROM schema_migrations");
    let current = rows[0]?.version ?? 0;
    for (const migration of PG_MIGRATIONS) {
      if (migration.version <= current) continue;
      await client.query(migration.sql);
      await client.query("INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)", [
        migration.version,
        migration.name,
        Date.now(),
      ]);
      current = migration.version;
    }
    await client.query("COMMIT");
    return current;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}
