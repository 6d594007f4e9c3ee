/**
 * A PostgreSQL restart mid-run, as the cluster's processes see it: every process reaches the
 * database through a TCP proxy which, while answers are streaming, emails are being sent and a
 * Stop is pressed, resets every connection and refuses new ones for a seeded while (a restart of
 * the database server), then lets them through again. After each outage every process still serves,
 * nothing is stuck, lost or done twice (see `test/support/pg-outage-scenario.ts`). A real restart of
 * the database server is `npm run chaos` (`test/pg-restart.chaos.ts`), outside `npm test`, since it
 * would break the other test files running beside this one.
 *
 * `TIDEMARK_CHAOS_CYCLES` makes it longer; `TIDEMARK_SEED` replays.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type TestCluster } from "./support/cluster.js";
import { OUTAGE_ENV, pgUrlThrough, proxyOutage, runOutageScenario } from "./support/pg-outage-scenario.js";
import { withSeededSchedule } from "./support/seeded-schedule.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";
import { TEST_PG_URL } from "../src/testing/postgres-test-database.js";

const CYCLES = Number(process.env.TIDEMARK_CHAOS_CYCLES ?? 3);
/** With the cluster's 2 s lease, a worker renews every 667 ms and lets go of its runs 1,333 ms after its last confirmed renewal. */
const OUTAGE_LENGTHS_MS: readonly (readonly [number, number])[] = [
  [200, 600],
  [700, 1_300],
  [2_500, 3_500],
];

describe("a PostgreSQL restart mid-run, through a TCP proxy that resets and refuses (real processes)", () => {
  let proxy: TcpProxy;
  let cluster: TestCluster;
  beforeAll(async () => {
    proxy = await startTcpProxy(TEST_PG_URL);
    const url = pgUrlThrough(proxy);
    cluster = await startCluster({ env: OUTAGE_ENV, databaseUrls: { "api-a": url, "api-b": url, "worker-1": url, "worker-2": url } });
  });
  afterAll(async () => {
    await cluster?.stop();
    await proxy?.close();
  });

  it(`every process keeps serving and every run ends in a defined status over ${CYCLES} outages`, () =>
    // Per cycle: the events seen before the outage, its length, the clients' seed. The lengths take turns: short (no
    // renewal missed), medium (renewals fail, the leases hold: runs go on after it), long (past the fence: runs recovered).
    withSeededSchedule(
      fc.tuple(
        ...Array.from({ length: CYCLES }, (_, cycle) => {
          const [min, max] = OUTAGE_LENGTHS_MS[cycle % OUTAGE_LENGTHS_MS.length]!;
          return fc.record({ afterEvents: fc.integer({ min: 4, max: 60 }), durationMs: fc.integer({ min, max }), seed: fc.integer() });
        }),
      ),
      async (cycles) => {
        const report = await runOutageScenario(cluster, proxyOutage(proxy), cycles);
        console.log(`chaos-pg-outage: ${JSON.stringify({ cycles: report.cycles, outages_ms: report.outagesMs, runs: report.runs, statuses: report.statuses, effects: report.effects, logged: report.logged, ...report.record.summary() })}`);
        if (report.record.violations.length > 0) console.log(`violations:\n${report.record.violations.join("\n").slice(0, 20_000)}`);
        expect(report.record.violations, cluster.logs(15)).toEqual([]);
        expect(report.cycles).toBe(CYCLES);
      },
    ), 60_000 + CYCLES * 30_000);
});
