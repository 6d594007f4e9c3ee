/**
 * SIGKILL of the embedded server (`tidemark serve`, role `all`, SQLite) at seeded moments while
 * several clients take turns: answers read to their end, Stops, Stop then Continue, dropped
 * connections resumed with Last-Event-ID, and emails approved through the demo `send_email` tool.
 * The server is restarted on the same database file after each kill. After each cycle: every run
 * ends (by its recovery policy, an accepted Stop as `cancelled`), every message a client saw
 * published is in history, and `tidemark check` is clean; at the end no email was sent twice and
 * the ledger agrees with the outbox.
 *
 * `TIDEMARK_CHAOS_CYCLES` and `TIDEMARK_CHAOS_CLIENTS` make it longer; `TIDEMARK_SEED` replays.
 */
import Database from "better-sqlite3";
import fc from "fast-check";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { afterEventsOrEnd, askJson, ChaosClient, ChaosRecord, checkEffects, followUps, seededRandom, settleRuns, statusCounts } from "./support/chaos-client.js";
import { withSeededSchedule } from "./support/seeded-schedule.js";
import { freePort, runCli, startServerProcess, type ServerProcess } from "./support/server-process.js";

const CYCLES = Number(process.env.TIDEMARK_CHAOS_CYCLES ?? 5);
const CLIENTS = Number(process.env.TIDEMARK_CHAOS_CLIENTS ?? 6);
/** About 1 s an answer: a kill lands mid-generation as often as between turns. */
const ENV = {
  TIDEMARK_DEMO_WORDS_PER_SECOND: "40",
  TIDEMARK_DEMO_WORDS: "40",
  TIDEMARK_DEMO_SEND_DELAY_MS: "25",
  TIDEMARK_DEMO_SEARCH_DELAY_MS: "5",
  TIDEMARK_LEASE_MS: "400",
};

function outboxOf(dbPath: string): Map<string, number> {
  if (!existsSync(dbPath)) return new Map();
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const hasOutbox = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'demo_outbox'").get();
    if (!hasOutbox) return new Map();
    const rows = db.prepare("SELECT idempotency_key AS key, COUNT(*) AS n FROM demo_outbox GROUP BY idempotency_key").all() as { key: string; n: number }[];
    return new Map(rows.map((row) => [row.key, row.n]));
  } finally {
    db.close();
  }
}

describe("SIGKILL of the embedded server under load (real process, SQLite)", () => {
  const dir = mkdtempSync(join(tmpdir(), "tidemark-chaos-embedded-"));
  const dbPath = join(dir, "tidemark.db");
  let server: ServerProcess | undefined;
  afterAll(() => {
    server?.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it(`recovers every run over ${CYCLES} kills with ${CLIENTS} clients: no stuck run, no email twice, no lost message`, () =>
    // Per cycle: after how many events the kill lands, and the seed of the clients' choices.
    withSeededSchedule(fc.array(fc.record({ afterEvents: fc.integer({ min: 5, max: 400 }), seed: fc.integer() }), { minLength: CYCLES, maxLength: CYCLES }), async (cycles) => {
      const port = await freePort();
      const record = new ChaosRecord();
      const kills: { cycle: number; afterEvents: number; exit: number | string }[] = [];
      let base = "";
      server = await startServerProcess({ dbPath, port, env: ENV });
      base = server.url;
      const threadIds: string[] = [];
      for (let index = 0; index < CLIENTS; index++) threadIds.push((await askJson(base, "/v1/threads", {})).body.thread_id as string);

      for (const [cycle, { afterEvents, seed }] of cycles.entries()) {
        let isKilled = false;
        const clients = threadIds.map(
          (threadId, index) => new ChaosClient({ record, apis: () => [base], first: 0, isFailover: false, draw: seededRandom(seed + index + 1), threadId, cycle }),
        );
        const loops = clients.map((client) => client.loop(() => isKilled));
        await afterEventsOrEnd(record, afterEvents, loops);
        isKilled = true;
        server.child.kill("SIGKILL");
        kills.push({ cycle, afterEvents, exit: await server.exited });
        await Promise.all(loops);
        // Restarted on the same file (same port, so the clients' addresses hold).
        server = await startServerProcess({ dbPath, port, env: ENV });
        base = server.url;
        const cycleRuns = [...record.runs.values()].filter((run) => run.cycle === cycle);
        const finals = await settleRuns(base, cycleRuns, record);
        console.log(`chaos-embedded cycle ${cycle}: kill after ${afterEvents} events, ${cycleRuns.length} runs ${JSON.stringify(statusCounts(finals.values()))}`);
        const check = await runCli(["check", "--db", dbPath]);
        if (check.code !== 0 || !/^0 violations/m.test(check.stdout)) record.violation(`cycle ${cycle}: tidemark check: ${check.stdout}${check.stderr}`);
        expect(record.violations, JSON.stringify(record.summary())).toEqual([]);
      }

      // A run after the last restart completes on every thread (confirming any email whose outcome a kill left unknown).
      await followUps(base, threadIds, record);
      const effects = await checkEffects(base, threadIds, outboxOf(dbPath), record);
      server.child.kill("SIGTERM");
      await server.exited;
      server = undefined;
      const check = await runCli(["check", "--db", dbPath]);
      if (check.code !== 0 || !/^0 violations/m.test(check.stdout)) record.violation(`final tidemark check: ${check.stdout}${check.stderr}`);
      console.log(`chaos-embedded: ${JSON.stringify({ kills: kills.length, ...record.summary(), effects })}`);
      expect(record.violations).toEqual([]);
      expect(kills.every((kill) => kill.exit === "SIGKILL")).toBe(true);
    }), 30_000 + CYCLES * 25_000);
});
