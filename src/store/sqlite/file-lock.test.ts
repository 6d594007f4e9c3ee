import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DatabaseLockedError } from "./database-locked-error.js";
import { lockDatabaseFile } from "./file-lock.js";
import { createSqliteStore } from "./sqlite-store.js";

describe("lockDatabaseFile", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-lock-"));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it("holds a file for one holder at a time, and lets the next take it once released", () => {
    const file = join(dir, "tidemark.db");
    const first = lockDatabaseFile(file);
    let refusal: unknown;
    try {
      lockDatabaseFile(file);
    } catch (error) {
      refusal = error;
    }
    expect(DatabaseLockedError.isInstance(refusal)).toBe(true);
    expect(refusal).toMatchObject({ databasePath: file, lockPath: `${file}.lock` });
    first.release();
    lockDatabaseFile(file).release();
  });

  it("makes an exclusive store refuse a second exclusive store, and free the file when closed", async () => {
    const file = join(dir, "tidemark.db");
    const store = createSqliteStore({ path: file, exclusive: true, checkpointIntervalMs: 0 });
    expect(() => createSqliteStore({ path: file, exclusive: true, checkpointIntervalMs: 0 })).toThrow(DatabaseLockedError);
    // A store that does not ask for the file alone (a test's second connection, the checker) still opens it.
    await createSqliteStore({ path: file, checkpointIntervalMs: 0 }).close();
    await store.close();
    await createSqliteStore({ path: file, exclusive: true, checkpointIntervalMs: 0 }).close();
  });
});
