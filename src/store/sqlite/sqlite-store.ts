/** The SQLite store: one file in WAL mode, migrated, its WAL checkpointed off the main thread, under the SQL store. */
import Database from "better-sqlite3";
import type { Store } from "../store.js";
import { SqlStore } from "../sql/sql-store.js";
import { lockDatabaseFile } from "./file-lock.js";
import { migrate } from "./migrations.js";
import { openReadOnlyDatabase } from "./open-read-only.js";
import { SqliteDriver } from "./sqlite-driver.js";
import { startWalCheckpointer, type WalCheckpointProgress } from "./wal-checkpointer.js";

/**
 * The WAL's size from which it is made to start over (see {@link SqliteStoreOptions.walLimitBytes}).
 * Large enough that a restart (a write waits for its fsync) is rare: every 6 s or so under 40 MB of
 * WAL a second, the order of 170 runs a second; small enough that the disk it takes is no concern.
 */
export const DEFAULT_WAL_LIMIT_BYTES = 256 * 1024 * 1024;

/** Options for {@link createSqliteStore}. */
export interface SqliteStoreOptions {
  /** A file path, or `:memory:`. */
  path: string;
  /**
   * How often a worker thread checkpoints the WAL (default 1000 ms), so no commit on the main
   * thread pays for it; 0 leaves SQLite's automatic checkpoints on. Files only.
   */
  checkpointIntervalMs?: number;
  /**
   * The WAL's size from which the checkpointer makes it start over, and to which its file is cut
   * back when it does (default 256 MB). Under writes that never pause, SQLite would otherwise only
   * append to it: the worker's checkpoints copy it back, but a commit lands during every copy.
   */
  walLimitBytes?: number;
  /** Where checkpoint failures are reported (default: ignored; the next one retries). */
  onBackgroundError?: (message: string) => void;
  /** Each background checkpoint's progress (tests wait on it). */
  onWalCheckpoint?: (progress: WalCheckpointProgress) => void;
  /**
   * Opens an existing Tidemark file for reading only (`tidemark check`): creates and migrates
   * nothing, and refuses a missing file, a file that is not a Tidemark database, or one at another
   * schema version. Every write then fails.
   */
  readOnly?: boolean;
  /**
   * Holds the file for this process alone while the store is open (a serving process): another
   * process asking the same is refused with `DatabaseLockedError`. The hold is an OS lock, gone
   * when the process ends, even by kill -9.
   */
  exclusive?: boolean;
}

/**
 * The embedded store: one SQLite file in WAL mode, under the SQL store. Every statement on its
 * one connection is serialised by the driver's mutex (see sqlite-driver.ts).
 */
export function createSqliteStore(options: SqliteStoreOptions): Store {
  if (options.walLimitBytes !== undefined && !(Number.isFinite(options.walLimitBytes) && options.walLimitBytes > 0)) {
    throw new RangeError(`walLimitBytes must be a positive number of bytes, not ${options.walLimitBytes}`);
  }
  if (options.readOnly) return new SqlStore(new SqliteDriver(openReadOnlyDatabase(options.path)));
  const isFile = options.path !== ":memory:" && !options.path.startsWith("file::memory:") && options.path !== "";
  // Taken before the file is opened: a refused process touches nothing.
  const lock = options.exclusive && isFile ? lockDatabaseFile(options.path) : undefined;
  let db: Database.Database | undefined;
  try {
    db = new Database(options.path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = NORMAL");
    db.pragma("busy_timeout = 5000");
    migrate(db);
    const intervalMs = options.checkpointIntervalMs ?? 1_000;
    if (!isFile || intervalMs <= 0) return new SqlStore(new SqliteDriver(db, { afterClose: () => lock?.release() }));
    db.pragma("wal_autocheckpoint = 0");
    const walLimitBytes = options.walLimitBytes ?? DEFAULT_WAL_LIMIT_BYTES;
    // The first commit after a restart cuts the file back to this size (a burst's high-water mark is not kept).
    db.pragma(`journal_size_limit = ${Math.floor(walLimitBytes)}`);
    const checkpointer = startWalCheckpointer(options.path, {
      intervalMs,
      restartFrames: Math.max(1, Math.ceil(walLimitBytes / (db.pragma("page_size", { simple: true }) as number))),
      onError: options.onBackgroundError ?? (() => {}),
      ...(options.onWalCheckpoint ? { onCheckpoint: options.onWalCheckpoint } : {}),
    });
    return new SqlStore(
      new SqliteDriver(db, { beforeClose: () => checkpointer.close(), afterClose: () => lock?.release() }),
    );
  } catch (error) {
    db?.close();
    lock?.release();
    throw error;
  }
}
