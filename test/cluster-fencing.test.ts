/**
 * A worker cut off from PostgreSQL stops its runs itself (decision 014), with real processes: an
 * API process pair and two workers on PostgreSQL, worker 1 connected through a TCP proxy. Mid-
 * generation the proxy stalls (it holds every byte, closes nothing). Worker 1 cannot renew its
 * leases, so it closes its upstream provider requests itself, before its lease expires; worker 2
 * then recovers the runs by their policy (`fail` → failed {worker_lost}, `resume` → a new attempt
 * that completes), among them a run that sent an approved email before the stall and was writing
 * its next answer: its new attempt reuses the sent email and never sends it again. No message is
 * published twice, no stream has a gap or a second end, and `tidemark check` is clean.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { call, checkStreamShape, isTerminal, startCluster, startRun, StreamFollower, waitForRun, type TestCluster } from "./support/cluster.js";
import { eventually } from "./support/eventually.js";
import { startProviderProcess, type ProviderProcess, type ProviderRequestSnapshot } from "./support/provider-process.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";

const LEASE_MS = 1_500;
/** Only a Stop or a fence ends it (about 100 s). */
const ENDLESS = { chunks: 5_000, intervalMs: 20 };
const SHORT = { chunks: 8, intervalMs: 5 };
const POLICIES = ["fail", "resume"] as const;
const EMAIL = { to: "fenced@example.com", subject: "Your order", body: "It ships today." };
/** The first answer of the email run: a call of the demo `send_email` tool (consequential: approval, then one commit). */
const SEND_EMAIL = { chunks: 1, intervalMs: 0, toolCalls: [{ name: "send_email", arguments: JSON.stringify(EMAIL) }] };

const isDelta = (event: RunEvent): boolean => event.type === "message.delta";

/** The test database's address, through the proxy. */
function throughProxy(proxy: TcpProxy): string {
  const url = new URL(TEST_PG_URL);
  return TEST_PG_URL.replace(`@${url.host}`, `@127.0.0.1:${new URL(proxy.url).port}`);
}

describe("a worker cut off from PostgreSQL stops its runs before its lease expires (real processes)", () => {
  let provider: ProviderProcess;
  let proxy: TcpProxy;
  let cluster: TestCluster;

  beforeAll(async () => {
    provider = await startProviderProcess(ENDLESS);
    proxy = await startTcpProxy(TEST_PG_URL);
    cluster = await startCluster({
      env: {
        TIDEMARK_MODEL: "openai-compatible:test",
        TIDEMARK_OPENAI_BASE_URL: provider.url,
        TIDEMARK_LEASE_MS: String(LEASE_MS),
        TIDEMARK_DEMO_TOOLS: "1",
        TIDEMARK_DEMO_SEND_DELAY_MS: "25",
      },
      databaseUrls: { "worker-1": throughProxy(proxy) },
    });
  });

  afterAll(async () => {
    // The processes first: worker 1's stalled connections end with it.
    await cluster?.stop();
    await proxy?.close();
    await provider?.close();
  });

  it("closes worker 1's provider requests itself, then worker 2 recovers the runs by policy", async () => {
    const [worker1, worker2] = cluster.workers as [typeof cluster.workers[0], typeof cluster.workers[0]];
    // Worker 2 is paused while the runs are created, so worker 1 surely holds all three.
    worker2.child.kill("SIGSTOP");
    type TrackedRun = { policy: (typeof POLICIES)[number]; kind: "generation" | "email"; content: string; threadId: string; runId: string; stream: StreamFollower };
    let runs: TrackedRun[];
    const track = async (policy: TrackedRun["policy"], kind: TrackedRun["kind"]): Promise<TrackedRun> => {
      const content = `${kind === "email" ? "Please send the email" : "a long story"} (${policy}) ${Date.now()}`;
      const { threadId, runId } = await startRun(cluster.apiA.url, content, { recovery_policy: policy });
      return { policy, kind, content, threadId, runId, stream: new StreamFollower(cluster.apiB.url, runId, 90_000) };
    };
    let email: TrackedRun;
    try {
      // The email run first: its model asks to send an email, and it waits for the approval.
      await provider.setScenario(SEND_EMAIL);
      email = await track("resume", "email");
      await email.stream.until((event) => event.type === "run.interrupted");
      // Every answer from now on is long: the email run's next one, and both generation runs.
      await provider.setScenario(ENDLESS);
      runs = [...(await Promise.all(POLICIES.map((policy) => track(policy, "generation")))), email];
      for (const run of runs) expect(await cluster.waitForHolder(run.runId)).toBe(0);
      // Approved through API B: worker 1 sends the email (one commit, recorded), then writes its next answer.
      const approved = await call(cluster.apiB.url, `/v1/runs/${email.runId}/approve`, {});
      expect(approved.status, JSON.stringify(approved.body)).toBe(200);
      await email.stream.until((event) => event.type === "tool.committed");
    } finally {
      worker2.child.kill("SIGCONT");
    }
    // Mid-generation: worker 1 streams all three answers (their deltas reach the API through PostgreSQL).
    await Promise.all(runs.map((run) => run.stream.until(isDelta)));
    const committedAt = email.stream.events.findIndex((event) => event.type === "tool.committed");
    await email.stream.until((event) => isDelta(event) && email.stream.events.indexOf(event) > committedAt);
    const streamed = await provider.snapshot();
    const requestOf = (snapshot: { requests: ProviderRequestSnapshot[] }, content: string) =>
      snapshot.requests.filter((request) => request.messages.includes(content) && !request.messages.includes("Write a title"));
    const openRequestOf = (snapshot: { requests: ProviderRequestSnapshot[] }, run: TrackedRun) => requestOf(snapshot, run.content).at(-1)!;
    for (const run of runs) expect(openRequestOf(streamed, run).socketClosedAt).toBeUndefined();

    // The network between worker 1 and PostgreSQL stalls: every byte held, no connection closed.
    const stalledAt = Date.now();
    proxy.stall();
    // Worker 2's new attempt must end: requests from now on get a short answer.
    await provider.setScenario(SHORT);

    // Worker 1 closes its provider requests itself (worker 2 cannot: it never had them).
    const closed = await eventually(
      async () => {
        const snapshot = await provider.snapshot();
        const requests = runs.map((run) => openRequestOf(snapshot, run));
        if (requests.some((request) => request.socketClosedAt === undefined)) throw new Error("a request of worker 1 is still open");
        return requests;
      },
      { what: "worker 1 closing its provider requests" },
    );
    // Its leases, as PostgreSQL has them: nothing of worker 1 reached the database since the stall.
    const leases = await cluster.query<{ run_id: string; lease_owner: string; lease_expires_at: string; status: string }>(
      "SELECT run_id, lease_owner, lease_expires_at, status FROM {schema}.runs WHERE run_id = ANY($1)",
      [runs.map((run) => run.runId)],
    );
    const figures = runs.map((run, index) => {
      const lease = leases.find((row) => row.run_id === run.runId)!;
      const expiresAt = Number(lease.lease_expires_at);
      const closedAt = closed[index]!.socketClosedAt!;
      return { run: `${run.kind} ${run.policy}`, lease, expiresAt, closedAt, stallToCloseMs: Math.round(closedAt - stalledAt), closeBeforeExpiryMs: Math.round(expiresAt - closedAt) };
    });
    console.log(`self-fencing figures (lease ${LEASE_MS} ms): ${JSON.stringify(figures.map(({ run, stallToCloseMs, closeBeforeExpiryMs }) => ({ run, stallToCloseMs, closeBeforeExpiryMs })))}`);
    for (const figure of figures) {
      // Closed by worker 1 itself, before its lease expired: nobody had recovered the run yet.
      expect(figure.lease.lease_owner, JSON.stringify(figure)).toBe(worker1.workerId);
      expect(figure.closedAt, JSON.stringify(figure)).toBeLessThan(figure.expiresAt);
    }
    // Logged with the run ids (runs whose leases were last renewed at different times are stopped at different checks).
    await eventually(
      () => {
        const fencedLines = worker1.log().split("\n").filter((line) => line.includes("self-fenced"));
        for (const run of runs) expect(fencedLines.some((line) => line.includes(run.runId))).toBe(true);
      },
      { what: "worker 1 logging its self-fencing of every run" },
    );

    // Worker 2 recovers all three once the leases expired, by policy.
    const finals = await Promise.all(runs.map((run) => waitForRun(cluster.apiA.url, run.runId, isTerminal, 60_000)));
    const finalOf = (run: TrackedRun) => finals[runs.indexOf(run)];
    const [failing, resuming] = runs as [TrackedRun, TrackedRun, TrackedRun];
    const label = () => cluster.logs(15);
    expect(finalOf(failing), label()).toMatchObject({ status: "failed", failure_reason: "worker_lost", attempt: 1, published_message_id: null });
    expect(finalOf(resuming), label()).toMatchObject({ status: "completed", attempt: 2 });
    expect(finalOf(email), label()).toMatchObject({ status: "completed", attempt: 2 });
    for (const run of runs) expect(await cluster.leaseOwner(run.runId)).toBeNull();
    // Each new attempt asked the provider once more, from worker 2; worker 1 asked nothing after the stall.
    const after = await provider.snapshot();
    expect(requestOf(after, failing.content)).toHaveLength(1);
    expect(requestOf(after, resuming.content)).toHaveLength(2);
    expect(requestOf(after, email.content)).toHaveLength(3);

    // The email was sent once, before the stall; the new attempt reused its result.
    const operations = (await call(cluster.apiB.url, `/v1/threads/${email.threadId}/operations`)).body.operations as any[];
    expect(operations.map((operation) => [operation.tool, operation.phase, operation.commit_attempts])).toEqual([["send_email", "committed", 1]]);
    expect(cluster.outboxCounts().get(operations[0].idempotency_key)).toBe(1);
    expect(email.stream.events.filter((event) => event.type === "tool.committed")).toHaveLength(1);

    // Every stream is gapless across attempts and ends once, with the run's end; nothing published twice.
    for (const run of runs) {
      const events = await run.stream.done;
      checkStreamShape(events);
      const published = events.filter((event) => event.type === "message.published").map((event) => event.message_id);
      expect(new Set(published).size, `${run.kind} ${run.policy}`).toBe(published.length);
      const history = (await call(cluster.apiB.url, `/v1/threads/${run.threadId}/history`)).body;
      const ids = (history.messages as any[]).map((message) => message.message_id as string);
      expect(new Set(ids).size).toBe(ids.length);
      expect(published.every((id) => ids.includes(id))).toBe(true);
      const answers = (history.messages as any[]).filter((message) => message.role === "assistant");
      // The fail run published nothing; the resume run its one answer; the email run its tool call, then one answer.
      const expectedAnswers = run.policy === "fail" ? 0 : run.kind === "email" ? 2 : 1;
      expect(answers.map((message) => message.run_id), JSON.stringify(history.messages)).toEqual(Array.from({ length: expectedAnswers }, () => run.runId));
      expect((await call(cluster.apiB.url, `/v1/threads/${run.threadId}`)).body).toMatchObject({ status: "idle", active_run_id: null });
    }
    // No external action twice (the demo outbox), and the fenced worker is still alive: it stopped its runs, not itself.
    expect([...cluster.outboxCounts()].filter(([, count]) => count > 1)).toEqual([]);
    expect(worker1.isAlive()).toBe(true);
    expect(worker2.log()).not.toMatch(/self-fenced/);

    const check = await cluster.check();
    expect(check.stdout, check.stderr).toMatch(/^0 violations/m);
    expect(check.code).toBe(0);
  }, 120_000);
});
