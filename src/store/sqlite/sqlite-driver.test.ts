/**
 * The SQLite driver's mutex: transactions that await between statements still run one at a
 * time, a statement issued meanwhile never sees (or joins) an open transaction, and a writer on
 * another connection waits for the lock without blocking this one.
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SqliteDriver } from "./sqlite-driver.js";

/** A driver on a fresh file with one table `t (n INTEGER)`. */
function openDriver(path: string): SqliteDriver {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.exec("CREATE TABLE IF NOT EXISTS t (n INTEGER)");
  return new SqliteDriver(db);
}

describe("the SQLite driver", () => {
  const dirs: string[] = [];
  const drivers: SqliteDriver[] = [];
  const fresh = (): string => {
    const dir = mkdtempSync(join(tmpdir(), "tidemark-driver-"));
    dirs.push(dir);
    return join(dir, "driver.db");
  };
  afterEach(async () => {
    await Promise.all(drivers.splice(0).map((driver) => driver.close()));
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("runs two transactions that await between statements one after the other", async () => {
    const driver = openDriver(fresh());
    drivers.push(driver);
    const order: string[] = [];
    let releaseFirst!: () => void;
    const firstMayFinish = new Promise<void>((resolve) => (releaseFirst = resolve));
    let firstStarted!: () => void;
    const firstIsIn = new Promise<void>((resolve) => (firstStarted = resolve));

    const first = driver.transaction(async (connection) => {
      order.push("first begins");
      await connection.run("INSERT INTO t (n) VALUES (?)", [1]);
      firstStarted();
      await firstMayFinish;
      order.push("first ends");
    });
    await firstIsIn;
    const second = driver.transaction(async (connection) => {
      order.push("second begins");
      const row = await connection.get("SELECT COUNT(*) AS count FROM t", []);
      order.push(`second sees ${String(row?.count)}`);
    });
    releaseFirst();
    await Promise.all([first, second]);

    expect(order).toEqual(["first begins", "first ends", "second begins", "second sees 1"]);
  });

  it("a read issued while a write transaction awaits waits for it, and never sees what it rolls back", async () => {
    const driver = openDriver(fresh());
    drivers.push(driver);
    let release!: () => void;
    const mayFail = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const isInserted = new Promise<void>((resolve) => (inserted = resolve));

    const failing = driver.transaction(async (connection) => {
      await connection.run("INSERT INTO t (n) VALUES (?)", [7]);
      inserted();
      await mayFail;
      throw new Error("changed its mind");
    });
    await isInserted;
    const read = driver.connection.all("SELECT n FROM t", []);
    release();

    await expect(failing).rejects.toThrow("changed its mind");
    // The read ran after the rollback: not inside the transaction, not seeing its row.
    expect(await read).toEqual([]);
    expect(driver.db.inTransaction).toBe(false);
  });

  it("a writer on another connection waits for the write lock without blocking the one that holds it", async () => {
    const path = fresh();
    const holder = openDriver(path);
    const other = openDriver(path);
    drivers.push(holder, other);
    let release!: () => void;
    const mayCommit = new Promise<void>((resolve) => (release = resolve));
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));

    const holding = holder.transaction(async (connection) => {
      await connection.run("INSERT INTO t (n) VALUES (?)", [1]);
      locked();
      await mayCommit;
    });
    await isLocked;
    // Busy: it retries after pauses, so this event loop still runs the holder's commit below.
    const waiting = other.transaction(async (connection) => connection.run("INSERT INTO t (n) VALUES (?)", [2]));
    release();
    await Promise.all([holding, waiting]);

    expect(await other.connection.all("SELECT n FROM t ORDER BY n", [])).toEqual([{ n: 1 }, { n: 2 }]);
  });
});
