/**
 * A PostgreSQL outage mid-run, against a cluster (API A, API B, two workers): runs are generating,
 * emails are being sent after their approval and a Stop is pressed while the database is away.
 * The fault is given: the TCP proxy's reset-and-refuse in `npm test` (what clients see of a
 * restart), or a real `pg_ctlcluster … restart` in the opt-in `npm run chaos`. After each outage:
 * every process is still up, every run ends in a defined status (completed, cancelled, or failed
 * with a reason), every client stream ends with the run's terminal event (or is read on from
 * where it stopped), an accepted Stop ends `cancelled`, no message a client saw published is
 * missing, and a new run on every thread completes; at the end no email was sent twice and
 * `tidemark check` is clean.
 */
import { TEST_PG_URL } from "../../src/testing/postgres-test-database.js";
import { ChaosClient, ChaosRecord, checkEffects, followUps, seededRandom, settleRuns, statusCounts, type RunSeen } from "./chaos-client.js";
import { call, type TestCluster } from "./cluster.js";
import { raceDelay } from "./seeded-schedule.js";
import type { TcpProxy } from "./tcp-proxy.js";

/** A fault that makes PostgreSQL unavailable for a while, then available again. */
export interface DatabaseOutage {
  name: string;
  /** Makes the database unavailable for about `durationMs` and resolves once it is back. */
  run(durationMs: number): Promise<void>;
}

/** The test database's address, through the proxy. */
export function pgUrlThrough(proxy: TcpProxy): string {
  const url = new URL(TEST_PG_URL);
  return TEST_PG_URL.replace(`@${url.host}`, `@127.0.0.1:${new URL(proxy.url).port}`);
}

/** The proxy's reset-and-refuse: every connection dropped, new ones refused for `durationMs`. */
export function proxyOutage(proxy: TcpProxy): DatabaseOutage {
  return {
    name: "proxy reset and refuse",
    async run(durationMs) {
      await proxy.refuse();
      await raceDelay(durationMs);
      await proxy.accept();
    },
  };
}

/** One cycle's draw. */
export interface OutageCycle {
  /** Events the clients see before the outage begins (the runs are mid-answer). */
  afterEvents: number;
  /** How long the database is away (the proxy's; a real restart takes what it takes). */
  durationMs: number;
  seed: number;
}

/** Log lines that say what the outage did, counted over every process (the report's figures). */
const LOGGED = {
  fenced: "self-fenced",
  renewal_failed: "lease renewal failed",
  events_retried: "events could not be written to the shared log yet",
  events_dropped: '"events could not be written to the shared log"',
  event_gap: "gap in the shared event log",
  events_superseded: "events not written: another process wrote their run's log meanwhile",
  event_after_terminal: "an event after the terminal one in the shared event log",
  stop_not_recorded: "a Stop could not be recorded",
  listen_lost: "the LISTEN connection was lost",
  idle_connection_closed: "an idle database connection was closed",
} as const;

export interface OutageReport {
  cycles: number;
  runs: number;
  statuses: Record<string, number>;
  outagesMs: number[];
  record: ChaosRecord;
  effects: { operations: number; committed: number; sent: number };
  /** Log lines of {@link LOGGED} by kind, every process together. */
  logged: Record<string, number>;
}

function countLogged(cluster: TestCluster): Record<string, number> {
  const lines = [...cluster.apis, ...cluster.workers].flatMap((node) => node.log().split("\n"));
  return Object.fromEntries(Object.entries(LOGGED).map(([kind, text]) => [kind, lines.filter((line) => line.includes(text)).length]));
}

/** About 3 s an answer: an outage lands mid-generation. */
export const OUTAGE_ENV = {
  TIDEMARK_DEMO_WORDS_PER_SECOND: "40",
  TIDEMARK_DEMO_WORDS: "120",
  TIDEMARK_DEMO_SEND_DELAY_MS: "25",
  TIDEMARK_DEMO_SEARCH_DELAY_MS: "5",
};

/**
 * Runs the outage scenario for each cycle on `cluster` and returns what happened; the violations
 * are in `record.violations` (the caller asserts there are none).
 */
export async function runOutageScenario(cluster: TestCluster, outage: DatabaseOutage, cycles: readonly OutageCycle[], threadsPerCycle = 4): Promise<OutageReport> {
  const record = new ChaosRecord();
  const apis = (): string[] => cluster.apis.map((api) => api.url);
  const allThreads: string[] = [];
  const statuses: Record<string, number> = {};
  const outagesMs: number[] = [];
  for (const [cycle, { afterEvents, durationMs, seed }] of cycles.entries()) {
    const draw = seededRandom(seed);
    const threadIds: string[] = [];
    for (let index = 0; index < threadsPerCycle + 2; index++) threadIds.push((await call(apis()[index % 2]!, "/v1/threads", {})).body.thread_id as string);
    allThreads.push(...threadIds);
    const clients = threadIds.map(
      (threadId, index) =>
        // While the database is away (and a moment after, while pools reconnect) a request may answer 500 `internal_error`: counted as a cut.
        new ChaosClient({ record, apis, first: index, isFailover: true, draw: seededRandom(seed + index + 1), threadId, cycle, isServerErrorExpected: () => true }),
    );
    // Generation runs, both policies, read from both API processes; two emails waiting for their approval.
    const generations = await Promise.all(
      clients.slice(0, threadsPerCycle).map((client, index) =>
        client.create("complete", { input: { role: "user", content: `Outage ${cycle}: a long story ${index}` }, recovery_policy: index % 2 === 0 ? "fail" : "resume" }, index % 2 === 0 ? "fail" : "resume"),
      ),
    );
    const emailClients = clients.slice(threadsPerCycle);
    const emails = await Promise.all(
      emailClients.map((client, index) =>
        client.create("email", { input: { role: "user", content: `Please email outage${cycle}-${index}@example.com about order ${seed}-${index}` }, recovery_policy: index % 2 === 0 ? "resume" : "fail" }, index % 2 === 0 ? "resume" : "fail"),
      ),
    );
    await Promise.all(emails.map((run, index) => emailClients[index]!.read(run, (event) => event.type === "run.interrupted")));
    const reading = generations.map((run, index) => clients[index]!.read(run).catch(() => undefined));
    await record.afterEvents(afterEvents);
    // Approved now: the sends and their records race the outage.
    const approving = emails.map((run, index) => emailClients[index]!.send("POST", `/v1/runs/${run.runId}/approve`, {}, "approve", run).catch(() => undefined));
    const emailReads = emails.map((run, index) => emailClients[index]!.read(run).catch(() => undefined));
    // A Stop pressed while the database is away: sent again until the server answers it.
    const stopTarget = generations[Math.floor(draw() * generations.length)]!;
    const startedAt = performance.now();
    const outageDone = outage.run(durationMs);
    const stopping = stopUntilAnswered(clients[generations.indexOf(stopTarget)]!, stopTarget, outageDone, record);
    await outageDone;
    outagesMs.push(Math.round(performance.now() - startedAt));
    await Promise.all([...reading, ...approving, ...emailReads, stopping]);

    // Every process kept serving.
    const dead = [...cluster.apis, ...cluster.workers].filter((node) => !node.isAlive());
    for (const node of dead) record.violation(`${node.name} died in the outage (${await node.exited}):\n${node.log().slice(-3000)}`);
    if (dead.length > 0) break;
    const cycleRuns = [...record.runs.values()].filter((run) => run.cycle === cycle);
    const finals = await settleRuns(apis()[0]!, cycleRuns, record);
    for (const final of finals.values()) {
      if (final.status === "failed" && !["worker_lost", "error", "provider_error"].includes(final.failure_reason)) record.violation(`failed without a clear reason: ${JSON.stringify(final)}`);
      if (final.status === "failed" && !final.failure_message) record.violation(`failed without a message: ${JSON.stringify(final)}`);
    }
    for (const [key, count] of Object.entries(statusCounts(finals.values()))) statuses[key] = (statuses[key] ?? 0) + count;
    // The processes serve again: a new run on each thread completes (an email's unknown outcome is confirmed first).
    await followUps(apis()[cycle % 2]!, threadIds, record);
    console.log(
      `${outage.name} cycle ${cycle}: outage ${outagesMs.at(-1)} ms after ${afterEvents} events, ${cycleRuns.length} runs ${JSON.stringify(statusCounts(finals.values()))}, cuts ${JSON.stringify(Object.fromEntries(record.cuts))}`,
    );
    if (record.violations.length > 0) break;
  }
  if (record.violations.length > 0) {
    // The stack of any 5xx a process answered, for the failure report.
    for (const node of [...cluster.apis, ...cluster.workers]) {
      for (const line of node.log().split("\n").filter((text) => text.includes('"unexpected error"')).slice(-3)) record.violation(`(log of ${node.name}) ${line.slice(0, 3000)}`);
      const warnings = node.log().split("\n").filter((text) => /"level":"(warn|error)"/.test(text) && !text.includes('"unexpected error"') && !text.includes("a Stop could not be recorded"));
      for (const line of warnings.slice(-40)) record.violation(`(log of ${node.name}) ${line.slice(0, 600)}`);
    }
    return { cycles: outagesMs.length, runs: record.runs.size, statuses, outagesMs, record, effects: { operations: 0, committed: 0, sent: 0 }, logged: countLogged(cluster) };
  }
  const effects = await checkEffects(apis()[0]!, allThreads, cluster.outboxCounts(), record);
  const check = await cluster.check();
  if (check.code !== 0 || !/^0 violations/m.test(check.stdout)) record.violation(`tidemark check: ${check.stdout}${check.stderr}`);
  return { cycles: outagesMs.length, runs: record.runs.size, statuses, outagesMs, record, effects, logged: countLogged(cluster) };
}

/** Sends a Stop during the outage and again (each cut one) until the server answers it, for at most 15 s after the outage. */
async function stopUntilAnswered(client: ChaosClient, run: RunSeen, outageDone: Promise<void>, record: ChaosRecord): Promise<void> {
  let backAt: number | undefined;
  void outageDone.then(() => (backAt = performance.now()));
  for (;;) {
    try {
      await client.stop(run);
      return;
    } catch (error) {
      // Cut (the database is away, or the pools reconnect): sent again a little later.
      if (backAt !== undefined && performance.now() - backAt > 15_000) {
        record.violation(`the Stop of ${run.runId} was not answered within 15 s after the outage: ${String(error)}`);
        return;
      }
      await Promise.race([backAt === undefined ? outageDone : new Promise(() => undefined), raceDelay(100)]);
    }
  }
}
