/**
 * SIGKILL while the WAL checkpointer is making the WAL start over (decision 007): a store whose
 * limit is tiny (64 kB) and whose worker ticks every 2 ms spends most of its time in PASSIVE
 * catch-ups and RESTARTs (their fsyncs) while a writer commits without pause, so kills drawn at
 * random points of the writes often land inside them. After every kill, the file opens clean,
 * every commit the killed process saw return is there, and the store goes on writing where it
 * stopped.
 */
import Database from "better-sqlite3";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { withSeededSchedule } from "./support/seeded-schedule.js";

const KILLS = 6;
const dir = mkdtempSync(join(tmpdir(), "tidemark-wal-crash-"));
const path = join(dir, "store.db");
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A writer in its own process (the built module, as a user runs it): from thread `first` on, one
 * thread a commit, a turn of the event loop between them; it prints `c <n>` once commit n has
 * returned and `r` after each RESTART the worker made.
 */
function writerScript(first: number): string {
  const module = fileURLToPath(new URL("../dist/store/sqlite/index.js", import.meta.url));
  return `import { createSqliteStore } from ${JSON.stringify(module)};
const store = createSqliteStore({
  path: ${JSON.stringify(path)},
  checkpointIntervalMs: 2,
  walLimitBytes: 64 * 1024,
  onWalCheckpoint: ({ restart }) => { if (restart === "made") process.stdout.write("r\\n"); },
  onBackgroundError: (message) => process.stderr.write(message + "\\n"),
});
for (let n = ${first}; ; n++) {
  await store.createThread({ tenantId: "t", threadId: "thr_" + n, checkpointId: "cp_" + n, metadata: { pad: "x".repeat(500) }, now: n });
  process.stdout.write("c " + n + "\\n");
  await new Promise(setImmediate);
}`;
}

/**
 * Runs a writer from thread `first` and SIGKILLs it `commitsAfter` commits after its
 * `restartsBefore`-th RESTART; returns the last commit it reported (every line it wrote is read).
 */
async function writeUntilKilled(first: number, restartsBefore: number, commitsAfter: number): Promise<{ lastCommitted: number; restarts: number }> {
  const child = spawn(process.execPath, ["--input-type=module", "-e", writerScript(first)], { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (text: string) => (stderr += text));
  const closed = once(child, "close");
  let lastCommitted = first - 1;
  let restarts = 0;
  let commitsSinceRestarts = 0;
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      if (line === "r") restarts++;
      else if (line.startsWith("c ")) {
        const n = Number(line.slice(2));
        expect(n).toBe(lastCommitted + 1);
        lastCommitted = n;
        if (restarts >= restartsBefore) commitsSinceRestarts++;
      }
      if (restarts >= restartsBefore && commitsSinceRestarts >= commitsAfter && !child.killed) child.kill("SIGKILL");
      if (lastCommitted - first > 50_000) throw new Error(`${restarts} of ${restartsBefore} RESTARTs in 50,000 commits: ${stderr}`);
    }
  } finally {
    // A failed check above must not leave the writer running.
    if (!child.killed) child.kill("SIGKILL");
  }
  const [code, signal] = (await closed) as [number | null, NodeJS.Signals | null];
  expect({ code, signal, stderr }).toEqual({ code: null, signal: "SIGKILL", stderr: "" });
  return { lastCommitted, restarts };
}

describe("a process killed while its WAL starts over", () => {
  it("loses no commit it saw return and leaves a file that opens clean, over many kills", async () => {
    const schedule = fc.array(fc.record({ restartsBefore: fc.integer({ min: 1, max: 4 }), commitsAfter: fc.integer({ min: 0, max: 30 }) }), {
      minLength: KILLS,
      maxLength: KILLS,
    });
    await withSeededSchedule(schedule, async (kills) => {
      let next = 0;
      for (const { restartsBefore, commitsAfter } of kills) {
        const { lastCommitted, restarts } = await writeUntilKilled(next, restartsBefore, commitsAfter);
        expect(restarts).toBeGreaterThanOrEqual(restartsBefore);
        // Opening runs SQLite's recovery of whatever the kill left in the WAL.
        const db = new Database(path);
        expect(db.pragma("integrity_check", { simple: true })).toBe("ok");
        const { n, top } = db.prepare("SELECT COUNT(*) AS n, MAX(CAST(substr(thread_id, 5) AS INTEGER)) AS top FROM threads").get() as { n: number; top: number };
        // Every commit reported is there; at most the one in flight when the kill came is there besides.
        expect(top === lastCommitted || top === lastCommitted + 1).toBe(true);
        expect(n).toBe(top + 1);
        db.close();
        next = top + 1;
      }
      // The store itself opens on what the kills left and writes on.
      const store = createSqliteStore({ path });
      await store.createThread({ tenantId: "t", threadId: `thr_${next}`, checkpointId: `cp_${next}`, metadata: {}, now: next });
      await store.close();
      const db = new Database(path, { readonly: true });
      expect((db.prepare("SELECT COUNT(*) AS n FROM threads").get() as { n: number }).n).toBe(next + 1);
      db.close();
    });
  }, 120_000);
});
