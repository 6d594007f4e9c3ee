/**
 * The soak's short version (issue 17, item 4; `npm run soak` is the long one): users doing random
 * turns (read to the end, Stop, drop and reconnect, Stop and Continue) against a real server for a
 * few seconds, each turn checked as a client sees it. Nothing may break: no violation, no 5xx, no
 * run left unfinished, nothing logged as an error, `tidemark check` clean. Seeded: a failure says
 * its seed, and TIDEMARK_SEED replays the same choices.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { runSoak, unfinishedRuns } from "../bench/soak/soak-driver.js";
import { startHarness, type Harness } from "./support/harness.js";
import { raceSeed } from "./support/seeded-schedule.js";

let h: Harness;

beforeAll(async () => {
  // A short answer at a fast pace: many turns in a few seconds, each still long enough to Stop.
  h = await startHarness({ demo: { wordsPerSecond: 150, wordCount: 40 } });
});

afterAll(async () => {
  await h?.close();
});

it("12 users for 8 s of random Stops, disconnects, reconnects and Continues: no violation, no 5xx, no unfinished run, check clean", async () => {
  const seed = raceSeed();
  const report = await runSoak({ url: h.url, users: 12, durationMs: 8_000, seed });
  const context = `seed ${seed} (replay with TIDEMARK_SEED=${seed})`;
  expect(report.violations, context).toEqual([]);
  expect(report.serverErrors, context).toEqual([]);
  expect(await unfinishedRuns(h.url, report.runIds), context).toEqual([]);
  // Every kind of turn happened, so each path was exercised.
  for (const [action, count] of Object.entries(report.turns)) expect(count, `${action} turns, ${context}`).toBeGreaterThan(0);
  await h.expectNoViolations();
}, 60_000);
