/**
 * SIGKILL of an API process of a cluster (API A, API B, two workers, PostgreSQL) at seeded
 * moments while clients stream from it and send Stops, approvals and creates through it. The
 * clients go on through the other API process: a stream resumes there with Last-Event-ID and is
 * gapless, a cut Stop is sent again and ends its run `cancelled` exactly once, a cut create is sent
 * again with its run id and names one run. The killed process is replaced. After each cycle no run
 * is stuck and every message a client saw published is in history; at the end no email was sent
 * twice and `tidemark check` is clean.
 *
 * `TIDEMARK_CHAOS_CYCLES` and `TIDEMARK_CHAOS_CLIENTS` make it longer; `TIDEMARK_SEED` replays.
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { afterEventsOrEnd, ChaosClient, ChaosRecord, checkEffects, followUps, seededRandom, settleRuns, statusCounts } from "./support/chaos-client.js";
import { call, startCluster, type TestCluster } from "./support/cluster.js";
import { withSeededSchedule } from "./support/seeded-schedule.js";

const CYCLES = Number(process.env.TIDEMARK_CHAOS_CYCLES ?? 4);
const CLIENTS = Number(process.env.TIDEMARK_CHAOS_CLIENTS ?? 6);
const ENV = {
  TIDEMARK_DEMO_WORDS_PER_SECOND: "40",
  TIDEMARK_DEMO_WORDS: "40",
  TIDEMARK_DEMO_SEND_DELAY_MS: "25",
  TIDEMARK_DEMO_SEARCH_DELAY_MS: "5",
};

describe("SIGKILL of an API process while clients stream and Stop through it (real processes, PostgreSQL)", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({ env: ENV });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it(`clients go on through the other API process over ${CYCLES} kills: gapless streams, Stops retried end cancelled once`, () =>
    // Per cycle: after how many events the kill lands, how many more before the clients finish their turns, the clients' seed.
    withSeededSchedule(
      fc.array(fc.record({ afterEvents: fc.integer({ min: 5, max: 300 }), thenEvents: fc.integer({ min: 20, max: 200 }), seed: fc.integer() }), {
        minLength: CYCLES,
        maxLength: CYCLES,
      }),
      async (cycles) => {
        const record = new ChaosRecord();
        const threadIds: string[] = [];
        for (let index = 0; index < CLIENTS; index++) threadIds.push((await call(cluster.apis[index % 2]!.url, "/v1/threads", {})).body.thread_id as string);
        const apis = (): string[] => cluster.apis.map((api) => api.url);
        for (const [cycle, { afterEvents, thenEvents, seed }] of cycles.entries()) {
          const victim = (cycle % 2) as 0 | 1;
          let isDone = false;
          const loops = threadIds.map((threadId, index) =>
            new ChaosClient({ record, apis, first: index, isFailover: true, draw: seededRandom(seed + index), threadId, cycle }).loop(() => isDone),
          );
          await afterEventsOrEnd(record, afterEvents, loops);
          // Every other cycle the kill lands while a Stop sent to the victim is in flight (recorded or not: both must end well).
          if (cycle % 2 === 1) await Promise.race([record.nextRequest("stop", cluster.apis[victim]!.url), afterEventsOrEnd(record, 2_000, loops)]);
          const { exit } = await cluster.replaceApi(victim, "SIGKILL");
          expect(exit).toBe("SIGKILL");
          // The clients go on a while through the survivor (and the replacement), then finish their turns.
          await afterEventsOrEnd(record, thenEvents, loops);
          isDone = true;
          await Promise.all(loops);

          const cycleRuns = [...record.runs.values()].filter((run) => run.cycle === cycle);
          const finals = await settleRuns(cluster.apis[1 - victim]!.url, cycleRuns, record);
          for (const run of cycleRuns) {
            const final = finals.get(run.runId);
            // Workers were not touched: every run completes, or ends cancelled by its Stop.
            if (final && !["completed", "cancelled"].includes(final.status)) record.violation(`${run.runId} ended ${JSON.stringify(final)}`);
            // The shared log outlives any API process: a resumed stream is never gone.
            if (run.isStreamGone) {
              const traces = (await cluster.traces(run.runId)).map((trace) => `${trace.kind} ${JSON.stringify(trace.data)}`);
              const seen = run.events.map((event) => `${event.type}@${event.seq}`).join(" ");
              record.violation(`${run.runId} (${run.turn}, ${run.stopsSent} Stops, ended ${JSON.stringify(final)}): its stream was gone (410) after an API process died; seen: ${seen}; traces: ${traces.join("; ")}`);
            }
          }
          // A Stop sent again is recorded once: one transition to cancel_requested, one to cancelled.
          const stopped = cycleRuns.filter((run) => run.stopsSent > 0).map((run) => run.runId);
          const transitions = await cluster.query<{ run_id: string; to_status: string; n: number }>(
            "SELECT run_id, to_status, COUNT(*)::int AS n FROM {schema}.run_transitions WHERE run_id = ANY($1) GROUP BY run_id, to_status",
            [stopped],
          );
          for (const row of transitions) if (row.n > 1) record.violation(`${row.run_id}: ${row.n} transitions to ${row.to_status}`);
          console.log(
            `chaos-api-kill cycle ${cycle}: killed ${victim === 0 ? "api-a" : "api-b"} after ${afterEvents} events, ${cycleRuns.length} runs ${JSON.stringify(statusCounts(finals.values()))}, cuts ${JSON.stringify(Object.fromEntries(record.cuts))}`,
          );
          expect(record.violations, cluster.logs(10)).toEqual([]);
        }

        const base = cluster.apiA.url;
        await followUps(base, threadIds, record);
        const effects = await checkEffects(base, threadIds, cluster.outboxCounts(), record);
        const check = await cluster.check();
        if (check.code !== 0 || !/^0 violations/m.test(check.stdout)) record.violation(`tidemark check: ${check.stdout}${check.stderr}`);
        console.log(`chaos-api-kill: ${JSON.stringify({ kills: CYCLES, ...record.summary(), effects })}`);
        expect(record.violations, cluster.logs(10)).toEqual([]);
        // The kills cut streams and Stops (and, as they land, creates and approvals): the failover was exercised.
        expect(record.cuts.get("stream") ?? 0).toBeGreaterThan(0);
        if (CYCLES >= 2) expect(record.cuts.get("stop") ?? 0).toBeGreaterThan(0);
      },
    ), 60_000 + CYCLES * 25_000);
});
