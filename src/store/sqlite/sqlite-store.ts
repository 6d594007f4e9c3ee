/** The SQLite store: one file in WAL mode, migrated, its WAL checkpointed off the main thread, under the SQL store. */
import Database from "better-sqlite3";
import type { Store } from "../store.js";
import { SqlStore } from "../sql/sql-store.js";
import { migrate } from "./migrations.js";
import { SqliteDriver } from "./sqlite-driver.js";
import { startWalCheckpointer, type WalCheckpointProgress } from "./wal-checkpointer.js";

/** Options for {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /** A file path, or `:memory:`. */
  path: string;
  /**
   * How often a worker thread checkpoints the WAL (default 1000 ms), so no commit on the main
   * thread pays for it; 0 leaves SQLite's automatic checkpoints on. Files only.
   */
  checkpointIntervalMs?: number;
  /** Where checkpoint failures are reported (default: ignored; the next one retries). */
  onBackgroundError?: (message: string) => void;
  /** Each background checkpoint's progress (tests wait on it). */
  onWalCheckpoint?: (progress: WalCheckpointProgress) => void;
}

/**
 * The embedded store: one SQLite file in WAL mode, under the SQL store. Every statement on its
 * one connection is serialised by the driver's mutex (see sqlite-driver.ts).
 */
export function createSqliteStore(options: SqliteStoreOptions): Store {
  const db = new Database(options.path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  migrate(db);
  const intervalMs = options.checkpointIntervalMs ?? 1_000;
  const isFile = options.path !== ":memory:" && !options.path.startsWith("file::memory:") && options.path !== "";
  if (!isFile || intervalMs <= 0) return new SqlStore(new SqliteDriver(db));
  db.pragma("wal_autocheckpoint = 0");
  const checkpointer = startWalCheckpointer(options.path, intervalMs, options.onBackgroundError ?? (() => {}), options.onWalCheckpoint);
  return new SqlStore(new SqliteDriver(db, () => checkpointer.close()));
}
