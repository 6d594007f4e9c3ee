/**
 * What a read-only PostgreSQL store checks before it reads (`tidemark check`): the schema exists,
 * holds Tidemark's tables, and is at the migration version this build reads. It never creates a
 * schema or migrates one, so a mistyped `--schema` stays a mistake, not a new empty schema.
 */
import type pg from "pg";
import { StoreSchemaError } from "../store-schema-error.js";
import { PG_MIGRATIONS } from "./schema.js";

/** The tables `tidemark check` reads. */
const TABLES = ["threads", "messages", "checkpoints", "runs", "run_transitions", "operations", "run_steps"] as const;

/** Throws an error that names the schema and what is wrong with it, unless it is a current Tidemark schema. */
export async function assertCurrentSchema(pool: pg.Pool, schema: string | undefined): Promise<void> {
  if (schema !== undefined) {
    const { rows } = await pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    if (rows.length === 0) throw new StoreSchemaError("missing", schema, `There is no schema "${schema}" in this database.`, { setting: "--schema" });
  }
  // The schema unqualified names resolve to: the named one, or the first of the search_path that exists.
  const { rows: current } = await pool.query<{ name: string | null }>("SELECT current_schema() AS name");
  const name = current[0]?.name;
  if (!name) throw new StoreSchemaError("missing", "search_path", "No schema of the connection's search_path exists; name one with --schema.", { setting: "--schema" });
  const { rows: found } = await pool.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = ANY($2)",
    [name, ["schema_migrations", ...TABLES]],
  );
  const tables = new Set(found.map((row) => row.table_name));
  const missing = TABLES.filter((table) => !tables.has(table));
  if (!tables.has("schema_migrations") || missing.length === TABLES.length) {
    throw new StoreSchemaError("not_tidemark", name, `Schema "${name}" holds no Tidemark tables.`);
  }
  const { rows } = await pool.query<{ version: number | null }>(`SELECT MAX(version) AS version FROM "${name}".schema_migrations`);
  const version = rows[0]?.version ?? null;
  const latest = PG_MIGRATIONS.at(-1)!.version;
  if (version !== null && version > latest) {
    throw new StoreSchemaError("newer_version", name, `Schema "${name}" was written by a newer Tidemark (schema version ${version}; this one reads up to ${latest}).`);
  }
  if (version === null || version < latest) {
    throw new StoreSchemaError(
      "older_version",
      name,
      `Schema "${name}" is at schema version ${version ?? 0}, and this Tidemark reads version ${latest}: ` +
        "start `tidemark serve` on it once to migrate it (check never migrates).",
    );
  }
  if (missing.length > 0) throw new StoreSchemaError("incomplete", name, `Schema "${name}" is not a complete Tidemark schema (no ${missing.join(", ")} table).`);
}
