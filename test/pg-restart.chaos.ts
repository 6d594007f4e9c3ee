/**
 * A real restart of the PostgreSQL server mid-run (`pg_ctlcluster --skip-systemctl-redirect 15
 * main restart`), the scenario of `test/chaos-pg-outage.test.ts` without the proxy. Not part of
 * `npm test`: a restart breaks every other test using the database at that moment. Run it alone,
 * on an otherwise idle machine: `npm run chaos` (it sets `TIDEMARK_CHAOS_REAL_PG_RESTART=1`).
 * `TIDEMARK_CHAOS_CYCLES` sets the number of restarts (2); `TIDEMARK_PG_RESTART_COMMAND` another command.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { OUTAGE_ENV, runOutageScenario, type DatabaseOutage } from "./support/pg-outage-scenario.js";
import { withSeededSchedule } from "./support/seeded-schedule.js";

const CYCLES = Number(process.env.TIDEMARK_CHAOS_CYCLES ?? 2);
const COMMAND = (process.env.TIDEMARK_PG_RESTART_COMMAND ?? "pg_ctlcluster --skip-systemctl-redirect 15 main restart").split(" ");
const isEnabled = process.env.TIDEMARK_CHAOS_REAL_PG_RESTART === "1";

const realRestart: DatabaseOutage = {
  name: "real PostgreSQL restart",
  async run() {
    await promisify(execFile)(COMMAND[0]!, COMMAND.slice(1));
  },
};

describe.runIf(isEnabled)("a real PostgreSQL restart mid-run (real processes)", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({ env: OUTAGE_ENV });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it(`every process keeps serving and every run ends in a defined status over ${CYCLES} restarts`, () =>
    withSeededSchedule(
      fc.array(fc.record({ afterEvents: fc.integer({ min: 4, max: 60 }), durationMs: fc.constant(0), seed: fc.integer() }), { minLength: CYCLES, maxLength: CYCLES }),
      async (cycles) => {
        const report = await runOutageScenario(cluster, realRestart, cycles);
        console.log(`chaos-pg-restart: ${JSON.stringify({ cycles: report.cycles, outages_ms: report.outagesMs, runs: report.runs, statuses: report.statuses, effects: report.effects, logged: report.logged, ...report.record.summary() })}`);
        expect(report.record.violations, cluster.logs(15)).toEqual([]);
        expect(report.cycles).toBe(CYCLES);
      },
    ), 60_000 + CYCLES * 40_000);
});
