/**
 * SIGKILL a worker of a running cluster (2 API processes, 2 workers, PostgreSQL) while answers
 * are being generated and approved emails are being sent, then restart it, several times: the
 * other worker recovers the lost runs by their policy (`fail` → failed {worker_lost}, `resume` →
 * a new attempt that completes), no email is sent twice, every operation ends resolved, no
 * published message is lost, no run is stuck, and `tidemark check` finds nothing wrong.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { call, checkStreamShape, isTerminal, startCluster, startRun, StreamFollower, waitForRun, type TestCluster } from "./support/cluster.js";
import { pausesMs, raceDelay, withSeededSchedule } from "./support/seeded-schedule.js";

const CYCLES = 4;
const EMAILS_PER_CYCLE = 4;
/** About 3 s per answer: the generation runs are mid-way when the worker dies. */
const ENV = {
  TIDEMARK_DEMO_WORDS_PER_SECOND: "40",
  TIDEMARK_DEMO_WORDS: "120",
  TIDEMARK_DEMO_SEND_DELAY_MS: "25",
  TIDEMARK_DEMO_SEARCH_DELAY_MS: "5",
};

type Policy = "fail" | "resume";

interface TrackedRun {
  cycle: number;
  kind: "generation" | "email";
  policy: Policy;
  threadId: string;
  runId: string;
  stream: StreamFollower;
  /** The worker id holding the run just before the kill. */
  holder: string | null;
  /** Whether the killed worker held it. */
  wasOnVictim: boolean;
}

const isDelta = (event: RunEvent): boolean => event.type === "message.delta";

describe("SIGKILL of a worker mid-generation and mid-commit, in a cluster (real processes, PostgreSQL)", () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ env: ENV });
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it(`recovers every run by its policy over ${CYCLES} crashes, never sends an email twice and loses no published message`, () =>
    // When each cycle's SIGKILL lands, drawn from the seed (a failure prints it; TIDEMARK_SEED replays).
    withSeededSchedule(pausesMs(CYCLES, 60), async (killAfterMs) => {
    const runs: TrackedRun[] = [];
    let approvals = 0;

    const track = async (cycle: number, kind: TrackedRun["kind"], policy: Policy, content: string, index: number): Promise<TrackedRun> => {
      const api = cluster.apis[index % 2]!;
      const { threadId, runId } = await startRun(api.url, content, { recovery_policy: policy });
      // Followed through the other API process.
      const stream = new StreamFollower(cluster.apis[(index + 1) % 2]!.url, runId, 120_000);
      const run: TrackedRun = { cycle, kind, policy, threadId, runId, stream, holder: null, wasOnVictim: false };
      runs.push(run);
      return run;
    };

    for (let cycle = 0; cycle < CYCLES; cycle++) {
      // Worker 1 and worker 2 die in turn. The other one is paused (SIGSTOP) while the first
      // generation runs are created, so the victim surely holds a `fail` and a `resume` one; it
      // holds no run then (the previous cycle's runs have all ended), so no lease lapses meanwhile.
      const victim = cycle % 2;
      const other = cluster.workers[1 - victim]!;
      const generations: TrackedRun[] = [];
      other.child.kill("SIGSTOP");
      try {
        generations.push(
          ...(await Promise.all(
            (["fail", "resume"] as const).map((policy, index) => track(cycle, "generation", policy, `Cycle ${cycle}: a long story (${policy})`, index)),
          )),
        );
        for (const run of generations) expect(await cluster.waitForHolder(run.runId)).toBe(victim);
      } finally {
        other.child.kill("SIGCONT");
      }
      // Then more generation runs and the emails, wherever the workers claim them.
      generations.push(
        ...(await Promise.all(
          (["fail", "resume"] as const).map((policy, index) => track(cycle, "generation", policy, `Cycle ${cycle}: another story (${policy})`, index + 1)),
        )),
      );
      const emails = await Promise.all(
        Array.from({ length: EMAILS_PER_CYCLE }, (_, index) =>
          track(cycle, "email", index % 2 === 0 ? "resume" : "fail", `Please email user${index}@example.com about order ${cycle}-${index}`, index),
        ),
      );
      await Promise.all(generations.map((run) => run.stream.until(isDelta)));
      await Promise.all(emails.map((run) => run.stream.until((event) => event.type === "run.interrupted")));

      const victimId = cluster.workers[victim]!.workerId;
      for (const run of [...emails, ...generations]) {
        run.holder = await cluster.leaseOwner(run.runId);
        run.wasOnVictim = run.holder === victimId;
        expect(run.holder, `${run.kind} ${run.runId} is not held by a worker`).not.toBeNull();
      }
      for (const run of generations.filter((generation) => generation.wasOnVictim)) {
        // Mid-generation: streaming, nothing of the answer published yet.
        expect(run.stream.events.some((event) => event.type === "message.published")).toBe(false);
      }

      // Approve every email at once, then kill the worker at a random moment while sends are in flight.
      const approving = emails.map((run, index) =>
        call(cluster.apis[(index + 1) % 2]!.url, `/v1/runs/${run.runId}/approve`, {}).catch((error: unknown) => ({ status: 0, body: String(error) })),
      );
      approvals += emails.length;
      // The last cycle's kill waits for a first commit, so commits surely happen whatever the machine's pace.
      if (cycle === CYCLES - 1) await Promise.any(emails.map((run) => run.stream.until((event) => event.type === "tool.committed")));
      await raceDelay(killAfterMs[cycle]!);
      const { exit, replacement } = await cluster.replaceWorker(victim, "SIGKILL");
      expect(exit).toBe("SIGKILL");
      expect(replacement.workerId).not.toBe(victimId);
      // An approval answered 200 (the worker took it) or 409 (the run had ended or was recovered meanwhile), never a 5xx.
      for (const response of await Promise.all(approving)) expect([200, 409], JSON.stringify(response.body)).toContain(response.status);

      // No stuck run: every run of the cycle ends (recovery is driven by lease expiry, so poll its status).
      const cycleRuns = runs.filter((run) => run.cycle === cycle);
      const finals = await Promise.all(cycleRuns.map((run) => waitForRun(cluster.apiA.url, run.runId, isTerminal)));
      for (const [index, final] of finals.entries()) {
        const run = cycleRuns[index]!;
        // The run's traces say how it got there (e.g. which recoveries acted on it).
        const traces = (await cluster.traces(run.runId)).map((trace) => `${trace.kind} ${JSON.stringify(trace.data)}`);
        const where = run.wasOnVictim ? "on the killed worker" : "on the survivor";
        const label = `cycle ${cycle} ${run.kind} ${run.policy} ${where}: ${JSON.stringify(final)}\ntraces:\n${traces.join("\n")}`;
        if (!run.wasOnVictim) {
          expect(final, label).toMatchObject({ status: "completed", attempt: 1 });
        } else if (run.policy === "fail") {
          expect(final, label).toMatchObject({ status: "failed", failure_reason: "worker_lost" });
          if (run.kind === "generation") expect(final.published_message_id, label).toBeNull();
        } else {
          expect(final, label).toMatchObject({ status: "completed", failure_reason: null });
          // One crash, one recovery: exactly one new attempt.
          expect(final.attempt, label).toBe(2);
        }
      }
    }

    const base = cluster.apiB.url;
    // Every stream ended with the run's terminal event, gapless across attempts.
    const streams = await Promise.all(runs.map((run) => run.stream.done));
    const publishedIds = new Map<string, Set<string>>();
    for (const [index, events] of streams.entries()) {
      const run = runs[index]!;
      const byAttempt = checkStreamShape(events);
      const final = (await call(base, `/v1/runs/${run.runId}`)).body;
      expect(events.at(-1)?.type).toBe(`run.${final.status}`);
      expect(Math.max(...byAttempt.keys())).toBeLessThanOrEqual(final.attempt);
      if (run.kind === "generation" && run.wasOnVictim && run.policy === "fail") {
        expect(events.at(-1)).toMatchObject({ type: "run.failed", reason: "worker_lost" });
      }
      const ids = publishedIds.get(run.threadId) ?? new Set<string>();
      for (const event of events) if (event.type === "message.published") ids.add(event.message_id);
      publishedIds.set(run.threadId, ids);
    }
    // Both policies met a crash mid-generation.
    const lostGenerations = runs.filter((run) => run.kind === "generation" && run.wasOnVictim);
    expect(new Set(lostGenerations.map((run) => run.policy))).toEqual(new Set(["fail", "resume"]));
    expect(approvals).toBe(CYCLES * EMAILS_PER_CYCLE);

    // Every thread is free again.
    const threadIds = [...new Set(runs.map((run) => run.threadId))];
    for (const threadId of threadIds) {
      expect((await call(base, `/v1/threads/${threadId}`)).body).toMatchObject({ status: "idle", active_run_id: null });
    }

    // Operations caught mid-commit are `outcome_unknown`: half are confirmed by the user through the
    // API (with what the outbox says), the rest by the next run, through the email tool's status hook.
    const emailThreads = [...new Set(runs.filter((run) => run.kind === "email").map((run) => run.threadId))];
    let unknownCount = 0;
    for (const threadId of emailThreads) {
      for (const operation of (await call(base, `/v1/threads/${threadId}/operations`)).body.operations as any[]) {
        if (operation.phase !== "outcome_unknown") continue;
        unknownCount++;
        if (unknownCount % 2 === 1) continue;
        const isSent = cluster.outboxCounts().has(operation.idempotency_key);
        const confirmed = await call(base, `/v1/threads/${threadId}/operations/${operation.op_id}/confirm`, {
          outcome: isSent ? "committed" : "not_committed",
          ...(isSent ? { result: { confirmed_by: "test" } } : {}),
        });
        expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(200);
        expect(confirmed.body.phase).toBe(isSent ? "committed" : "abandoned");
      }
    }
    const followUps = await Promise.all(
      emailThreads.map(async (threadId, index) => {
        const next = await call(cluster.apis[index % 2]!.url, `/v1/threads/${threadId}/runs`, { input: { role: "user", content: "thanks, that is all" } });
        expect(next.status, JSON.stringify(next.body)).toBe(201);
        return next.body.run_id as string;
      }),
    );
    for (const runId of followUps) {
      const final = await waitForRun(base, runId, isTerminal);
      const traces = (await cluster.traces(runId)).map((trace) => `${trace.kind} ${JSON.stringify(trace.data)}`);
      expect(final.status, `follow-up ${JSON.stringify(final)}\ntraces:\n${traces.join("\n")}`).toBe("completed");
    }

    // Exactly once: no key was sent twice, and the ledger agrees with the outbox in both directions.
    const sent = cluster.outboxCounts();
    expect([...sent].filter(([, count]) => count > 1)).toEqual([]);
    const operations = (await Promise.all(emailThreads.map((threadId) => call(base, `/v1/threads/${threadId}/operations`)))).flatMap(
      (response) => response.body.operations as any[],
    );
    expect(operations.length).toBeGreaterThan(0);
    for (const operation of operations) {
      expect(["committed", "failed", "abandoned"], JSON.stringify(operation)).toContain(operation.phase);
      expect(operation.commit_attempts).toBeLessThanOrEqual(1);
      expect(sent.has(operation.idempotency_key), `${operation.phase} ${operation.idempotency_key}`).toBe(operation.phase === "committed");
    }
    expect(operations.some((operation) => operation.phase === "committed")).toBe(true);

    // No published message was lost: every one a stream announced is in its thread's history.
    for (const [threadId, ids] of publishedIds) {
      const history = (await call(base, `/v1/threads/${threadId}/history`)).body;
      const inHistory = new Set((history.messages as any[]).map((message) => message.message_id as string));
      expect([...ids].filter((id) => !inHistory.has(id)), threadId).toEqual([]);
    }

    const check = await cluster.check();
    expect(check.stdout, check.stderr).toMatch(/^0 violations/m);
    expect(check.code).toBe(0);
  }), 120_000);
});
