/**
 * One serving process per SQLite file. Two processes on one file each run their own generations,
 * and a Stop received by one never reaches the other's (issue 11, item 20). The serving process
 * holds an exclusive SQLite lock on a sidecar file, `<database>.lock`: an OS lock (fcntl), which
 * the kernel drops when the process ends however it ends, so a kill -9 leaves nothing to clean up.
 * The database file itself stays shareable: the WAL checkpointer's worker thread, the demo
 * outbox and `tidemark check` open it beside the server.
 */
import Database from "better-sqlite3";
import fs from "node:fs";
import path from "node:path";
import { DatabaseLockedError } from "./database-locked-error.js";

/** An exclusive hold on a database file; `release()` lets the next process take it. */
export interface FileLock {
  /** The sidecar file that carries the lock. */
  readonly lockPath: string;
  release(): void;
}

/** Takes the exclusive hold on `databasePath` for this process, or throws {@link DatabaseLockedError} at once. */
export function lockDatabaseFile(databasePath: string): FileLock {
  const lockPath = `${canonicalPath(databasePath)}.lock`;
  // No busy timeout: a second server is refused at once, not after a wait.
  const db = new Database(lockPath, { timeout: 0 });
  try {
    // EXCLUSIVE locking mode keeps the lock past any transaction; the open exclusive transaction takes it now.
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === "SQLITE_BUSY") throw new DatabaseLockedError(databasePath, lockPath, { cause: error });
    throw error;
  }
  return {
    lockPath,
    release() {
      if (db.open) db.close();
    },
  };
}

/** One name per file, so `./tidemark.db`, its absolute path and a symlink to it share one lock. */
function canonicalPath(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    // Not created yet: its directory's real path and its name (a missing directory fails at the open).
    const directory = path.dirname(path.resolve(file));
    return path.join(fs.existsSync(directory) ? fs.realpathSync(directory) : directory, path.basename(file));
  }
}
