/**
 * Every statement the SQLite store runs on the turn path reads through an index, never across a
 * whole table or a whole tenant. The soak found one that did: the tenant's run limit counted its
 * unfinished runs through the primary key (every run the tenant ever had), so each create cost
 * more than the last, and after 18,000 runs it was 30% of the server's CPU. SQLite chooses plans
 * without statistics here (the store never runs ANALYZE), so its choice is a property of the
 * schema and the text, checked here with EXPLAIN QUERY PLAN on each statement prepared while
 * users do turns of every kind.
 */
import Database from "better-sqlite3";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { runSoak } from "../bench/soak/soak-driver.js";
import { LOCAL_TENANT } from "../src/server/auth.js";
import { startHarness, type Harness } from "./support/harness.js";

/** Tables that grow with use: a plan may not walk one of them whole, or a tenant's part of it. */
const GROWING_TABLES = new Set(["threads", "runs", "run_transitions", "run_steps", "messages", "checkpoints", "operations", "traces"]);

const prepared = new Set<string>();
let h: Harness;

beforeAll(async () => {
  const prepare = Database.prototype.prepare;
  vi.spyOn(Database.prototype, "prepare").mockImplementation(function (this: Database.Database, source: string) {
    prepared.add(source);
    return prepare.call(this, source);
  });
  // A small tenant limit, so the limit's count runs as it does in production (it is skipped without one).
  h = await startHarness({ demo: { wordsPerSecond: 300, wordCount: 30 }, limits: { maxActiveRunsPerTenant: 1_000, maxQueuedRunsPerTenant: 1_000 } });
});

afterAll(async () => {
  vi.restoreAllMocks();
  await h?.close();
});

/** The rows of EXPLAIN QUERY PLAN that walk a growing table whole or by tenant only. */
function tableWalks(db: Database.Database, source: string, partialIndexes: ReadonlySet<string>): string[] {
  const parameters = Array.from({ length: (source.match(/\?/g) ?? []).length }, () => null);
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${source}`).all(...parameters) as { detail: string }[];
  return plan
    .map((row) => row.detail)
    .filter((detail) => {
      const match = /^(SCAN|SEARCH) (\w+)(?: AS \w+)?(?: USING (?:COVERING )?(?:INDEX (\w+)|PRIMARY KEY|INTEGER PRIMARY KEY))?(?: \((.*)\))?/.exec(detail);
      if (!match) return false;
      const [, kind, table, index, constraints] = match;
      if (!GROWING_TABLES.has(table!)) return false;
      // A partial index holds only the unfinished rows (the live runs, the waiting ones): walking it is bounded.
      if (index && partialIndexes.has(index)) return false;
      if (kind === "SCAN") return true;
      // Every row of a tenant; or, for runs, every run a thread ever had (a turn looks for the live or waiting ones).
      return constraints === "tenant_id=?" || (table === "runs" && constraints === "tenant_id=? AND thread_id=?");
    });
}

it("the turn path's statements on SQLite each read through an index, not a whole table or tenant", async () => {
  // Every kind of turn (read to the end, Stop, drop and reconnect, Stop and Continue), and history reads.
  const report = await runSoak({ url: h.url, users: 6, durationMs: 2_000, seed: 20_261_203 });
  expect(report.violations).toEqual([]);
  for (const count of Object.values(report.turns)) expect(count).toBeGreaterThan(0);
  const threadId = await h.createThread();
  await h.api(`/v1/threads/${threadId}/checkpoints`);
  await h.api(`/v1/threads/${threadId}/operations`);
  await h.api("/v1/threads");
  // What a worker and recovery run beside the turns (prepared even when they find nothing).
  const store = h.tidemark.store;
  const now = Date.now();
  await store.claimQueuedRuns({ owner: "wrk_plans", leaseExpiresAt: now, limit: 1, now });
  await store.listCancelledRuns("wrk_plans");
  await store.renewLeases("wrk_plans", now);
  await store.listRecoverableRuns(now, now);
  await store.countQueuedRuns();
  await store.listActiveRuns(LOCAL_TENANT, threadId);
  await store.markOutcomesUnknown(LOCAL_TENANT, "run_none", now);

  const db = new Database(h.dbPath, { readonly: true });
  try {
    const partialIndexes = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'").all() as { name: string }[]).map((row) => row.name),
    );
    const statements = [...prepared].filter((source) => /^\s*(SELECT|UPDATE|DELETE|INSERT)/i.test(source));
    expect(statements.length).toBeGreaterThan(20);
    const walks = statements.flatMap((source) => tableWalks(db, source, partialIndexes).map((detail) => `${detail}   in   ${source.replace(/\s+/g, " ")}`));
    expect(walks).toEqual([]);
  } finally {
    db.close();
  }
}, 60_000);
