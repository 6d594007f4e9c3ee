/**
 * Opens an existing Tidemark SQLite file for reading only, as `tidemark check` needs it: nothing
 * is created or migrated, and a file that is not a current Tidemark database is refused with a
 * message that says what it is instead. A served file can be read while its server writes.
 */
import Database from "better-sqlite3";
import { StoreSchemaError } from "../store-schema-error.js";
import { MIGRATIONS } from "./migrations.js";

/** The tables `tidemark check` reads. */
const TABLES = ["threads", "messages", "checkpoints", "runs", "run_transitions", "operations", "run_steps"] as const;

/** The read-only connection, or an error whose message names the file and what is wrong with it. */
export function openReadOnlyDatabase(path: string): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (error) {
    if ((error as { code?: string }).code === "SQLITE_CANTOPEN") throw new StoreSchemaError("missing", path, `No database at ${path}.`, { cause: error });
    throw error;
  }
  try {
    assertCurrentSchema(db, path);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

function assertCurrentSchema(db: Database.Database, path: string): void {
  let tables: Set<string>;
  try {
    tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((row) => row.name));
  } catch (error) {
    if ((error as { code?: string }).code === "SQLITE_NOTADB") throw new StoreSchemaError("not_a_database", path, `${path} is not a SQLite database.`, { cause: error });
    throw error;
  }
  const missing = TABLES.filter((table) => !tables.has(table));
  if (!tables.has("schema_migrations") || missing.length === TABLES.length) {
    throw new StoreSchemaError("not_tidemark", path, `${path} is not a Tidemark database (it has no Tidemark tables).`);
  }
  const { version } = db.prepare("SELECT MAX(version) AS version FROM schema_migrations").get() as { version: number | null };
  const latest = MIGRATIONS.at(-1)!.version;
  if (version !== null && version > latest) {
    throw new StoreSchemaError("newer_version", path, `${path} was written by a newer Tidemark (schema version ${version}; this one reads up to ${latest}).`);
  }
  if (version === null || version < latest) {
    throw new StoreSchemaError(
      "older_version",
      path,
      `${path} is at schema version ${version ?? 0}, and this Tidemark reads version ${latest}: ` +
        "start `tidemark serve` on it once to migrate it (check never migrates).",
    );
  }
  if (missing.length > 0) throw new StoreSchemaError("incomplete", path, `${path} is not a complete Tidemark database (no ${missing.join(", ")} table).`);
}
