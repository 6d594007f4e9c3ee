import Database from "better-sqlite3";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { createId } from "../../core/index.js";
import type { Store } from "../store.js";
import { createSqliteStore, type SqliteStoreOptions } from "./sqlite-store.js";
import type { WalCheckpointProgress } from "./wal-checkpointer.js";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function writeThreads(store: Store, count: number): Promise<void> {
  for (let index = 0; index < count; index++) {
    await store.createThread({ tenantId: "t", threadId: createId("thr"), checkpointId: createId("cp"), metadata: { pad: "x".repeat(2_000) }, now: index });
    // Let the worker's timer run between batches, as it would between requests.
    if (index % 50 === 49) await new Promise(setImmediate);
  }
}

const walBytes = (path: string): number => statSync(`${path}-wal`).size;

/** A store on a new file whose checkpointer ticks every 5 ms; its background errors are collected. */
function openStore(options: Pick<SqliteStoreOptions, "walLimitBytes" | "onWalCheckpoint">): { path: string; store: Store; errors: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "tidemark-wal-"));
  dirs.push(dir);
  const path = join(dir, "store.db");
  const errors: string[] = [];
  const store = createSqliteStore({ path, checkpointIntervalMs: 5, onBackgroundError: (message) => errors.push(message), ...options });
  return { path, store, errors };
}

/** One write, then a turn of the event loop, as between requests: the worker's reports arrive. */
async function writeThread(store: Store, now: number): Promise<void> {
  await store.createThread({ tenantId: "t", threadId: createId("thr"), checkpointId: createId("cp"), metadata: { pad: "x".repeat(500) }, now });
  await new Promise(setImmediate);
}

/**
 * Runs `body` in a node process of its own as an ES module script (`--input-type=module -e`), with
 * `createSqliteStore` imported from the built module, as a user runs it (npm test builds first).
 */
function runWithBuiltStore(body: string) {
  const module = fileURLToPath(new URL("../../../dist/store/sqlite/index.js", import.meta.url));
  const script = `import { createSqliteStore } from ${JSON.stringify(module)};\n${body}`;
  return spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
}

describe("the WAL checkpointer", () => {
  it("keeps the WAL bounded from a worker thread while the main connection never checkpoints", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tidemark-wal-"));
    dirs.push(dir);
    const path = join(dir, "store.db");
    const errors: string[] = [];
    // Resolves at the first checkpoint begun after the burst that copied the whole WAL back (the
    // next writer then starts the WAL file over).
    let onComplete: ((startedAt: number) => void) | undefined;
    const store = createSqliteStore({
      path,
      checkpointIntervalMs: 5,
      onBackgroundError: (message) => errors.push(message),
      onWalCheckpoint: ({ log, checkpointed, startedAt }) => {
        if (log > 0 && checkpointed === log) onComplete?.(startedAt);
      },
    });
    const fullyCheckpointed = (): Promise<void> => {
      const burstEndedAt = Date.now();
      return new Promise((resolve) => {
        onComplete = (startedAt) => {
          if (startedAt > burstEndedAt) resolve();
        };
      });
    };
    // What one burst appends to a WAL nobody checkpoints (a store whose worker never ticks while
    // it lives): the WAL's size after a burst without any restart in it. Measured, not taken from
    // the first burst below, which a restart in its middle may leave smaller (timing, not a fault).
    const reference = join(dir, "reference.db");
    const unchecked = createSqliteStore({ path: reference, checkpointIntervalMs: 1e9 });
    await writeThreads(unchecked, 300);
    const oneBurst = walBytes(reference);
    await unchecked.close();
    // The WAL file keeps its high-water size and is reused once checkpointed: it never holds much
    // more than one burst. Without any checkpoint it would grow by a burst every round (6 here).
    for (let round = 0; round < 6; round++) {
      await writeThreads(store, 300);
      await fullyCheckpointed();
    }
    expect(walBytes(path)).toBeLessThan(oneBurst * 1.5);
    const reader = new Database(path, { readonly: true });
    expect((reader.prepare("SELECT COUNT(*) AS n FROM threads").get() as { n: number }).n).toBe(1_800);
    reader.close();
    await store.close();
    expect(errors).toEqual([]);
  });

  it("makes the WAL start over under writes that never pause, and cuts its file back to the limit", async () => {
    const walLimitBytes = 256 * 1024;
    let restarts = 0;
    let latestStartedAt = 0;
    let onReport: (() => void) | undefined;
    const { path, store, errors } = openStore({
      walLimitBytes,
      onWalCheckpoint: ({ startedAt, restart }) => {
        if (restart === "made") restarts++;
        latestStartedAt = startedAt;
        onReport?.();
      },
    });
    // Each write begins as soon as the last one committed and the event loop turned (the worker's
    // reports arrive): no moment without a writer is left for SQLite to start the WAL over by
    // itself, so only the checkpointer's RESTART can.
    let written = 0;
    while (restarts < 3) {
      if (written === 20_000) throw new Error(`the WAL started over ${restarts} times in ${written} writes that never paused`);
      await writeThread(store, written++);
    }
    // Once a checkpoint has copied everything back with nobody writing, the next commit starts the
    // WAL over and cuts the file back to the limit, whatever size the writes above left it at.
    const writesEndedAt = Date.now();
    await new Promise<void>((resolve) => {
      onReport = () => {
        if (latestStartedAt > writesEndedAt) resolve();
      };
    });
    await store.createThread({ tenantId: "t", threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: written });
    expect(walBytes(path)).toBeLessThanOrEqual(walLimitBytes + 64 * 1024);
    await store.close();
    const reader = new Database(path, { readonly: true });
    expect((reader.prepare("SELECT COUNT(*) AS n FROM threads").get() as { n: number }).n).toBe(written + 1);
    reader.close();
    expect(errors).toEqual([]);
  });

  it("gives up a RESTART a reader holds off, and does not try again at every tick", async () => {
    const restarts: WalCheckpointProgress["restart"][] = [];
    const { path, store, errors } = openStore({ walLimitBytes: 64 * 1024, onWalCheckpoint: ({ restart }) => void restarts.push(restart) });
    await writeThread(store, 0);
    // Another connection holds a read snapshot open (a backup, another process's check): no
    // RESTART can finish while it lasts.
    const reader = new Database(path, { readonly: true });
    reader.prepare("BEGIN").run();
    expect((reader.prepare("SELECT COUNT(*) AS n FROM threads").get() as { n: number }).n).toBe(1);
    let written = 1;
    while (!restarts.includes("busy")) {
      if (written === 20_000) throw new Error(`no RESTART was tried in ${written} writes past the limit`);
      await writeThread(store, written++);
    }
    // Five more checkpoints past the limit, the writes going on: none tries a RESTART again (ten
    // ticks go by first).
    const busyAt = restarts.lastIndexOf("busy");
    while (restarts.length < busyAt + 6) await writeThread(store, written++);
    expect(restarts.slice(busyAt + 1, busyAt + 6)).toEqual(["none", "none", "none", "none", "none"]);
    reader.prepare("COMMIT").run();
    reader.close();
    await store.close();
    const check = new Database(path, { readonly: true });
    expect((check.prepare("SELECT COUNT(*) AS n FROM threads").get() as { n: number }).n).toBe(written);
    check.close();
    expect(errors).toEqual([]);
  });

  it("refuses a WAL limit that is not a positive number of bytes", () => {
    const dir = mkdtempSync(join(tmpdir(), "tidemark-wal-"));
    dirs.push(dir);
    for (const walLimitBytes of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => createSqliteStore({ path: join(dir, "limit.db"), walLimitBytes })).toThrow(RangeError);
    }
  });

  it("checkpoints in a process started with --input-type=module (the worker takes none of its flags)", () => {
    const dir = mkdtempSync(join(tmpdir(), "tidemark-wal-"));
    dirs.push(dir);
    // A script given with -e is an ES module under --input-type=module; the worker's source is not.
    const result = runWithBuiltStore(`let reported;
const checkpointed = new Promise((resolve) => (reported = resolve));
const store = createSqliteStore({
  path: ${JSON.stringify(join(dir, "flags.db"))},
  checkpointIntervalMs: 5,
  onWalCheckpoint: ({ checkpointed }) => { if (checkpointed > 0) reported(); },
  onBackgroundError: (message) => console.error(message),
});
await store.createThread({ tenantId: "t", threadId: "thr_1", checkpointId: "cp_1", metadata: {}, now: 1 });
await checkpointed;
await store.close();
console.log("checkpointed");`);
    expect({ stdout: result.stdout.trim(), stderr: result.stderr, status: result.status }).toEqual({ stdout: "checkpointed", stderr: "", status: 0 });
  });

  it("lets a process whose last work is closing the store wait for the worker, then exit 0", () => {
    const dir = mkdtempSync(join(tmpdir(), "tidemark-wal-"));
    dirs.push(dir);
    const result = runWithBuiltStore(`const store = createSqliteStore({ path: ${JSON.stringify(join(dir, "close.db"))} });
await store.close();
console.log("closed");`);
    expect(result.stdout.trim()).toBe("closed");
    expect(result.status).toBe(0);
  });
});
