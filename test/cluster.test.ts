/**
 * The scaled deployment as real processes: two API processes and two workers on one PostgreSQL
 * schema (DESIGN §14). A cancel or an approval accepted by any API process reaches the worker
 * holding the run; any API process serves any run's stream, gapless across reconnects and across
 * a hand-over; a draining worker hands its runs back and the other worker finishes them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import {
  attemptOfSeq,
  ATTEMPT_STRIDE,
  call,
  checkStreamShape,
  isTerminal,
  readEvents,
  startCluster,
  startRun,
  StreamFollower,
  waitForRun,
  type ClusterNode,
  type TestCluster,
} from "./support/cluster.js";

/** About 3 s per answer: long enough to stop, reconnect or drain mid-generation. */
const ENV = {
  TIDEMARK_DEMO_WORDS_PER_SECOND: "50",
  TIDEMARK_DEMO_WORDS: "150",
  TIDEMARK_DEMO_SEND_DELAY_MS: "20",
  TIDEMARK_DEMO_SEARCH_DELAY_MS: "5",
};

const isDelta = (event: RunEvent): boolean => event.type === "message.delta";

describe("a cluster of 2 API processes and 2 workers (real processes, PostgreSQL)", () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await startCluster({ env: ENV });
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  async function expectNoViolations(): Promise<void> {
    const check = await cluster.check();
    expect(check.stdout, check.stderr).toMatch(/^0 violations/m);
    expect(check.code).toBe(0);
  }

  it("a cancel through API A stops the run worker 2 executes; the stream on API B tells it, nothing is published after", async () => {
    const [worker1, worker2] = cluster.workers as [ClusterNode, ClusterNode];
    // Worker 1 is paused while the run is created, so worker 2 is the one that claims it.
    worker1.child.kill("SIGSTOP");
    let runId: string;
    let threadId: string;
    let stream: StreamFollower;
    try {
      ({ runId, threadId } = await startRun(cluster.apiA.url, "Tell me about stopping runs in a cluster"));
      expect(await cluster.waitForHolder(runId)).toBe(1);
      stream = new StreamFollower(cluster.apiB.url, runId);
      await stream.until(isDelta);
    } finally {
      worker1.child.kill("SIGCONT");
    }
    // Both workers are up; the run is mid-generation on worker 2.
    expect(await cluster.leaseOwner(runId)).toBe(worker2.workerId);
    expect((await call(cluster.apiB.url, `/v1/runs/${runId}`)).body.status).toBe("running");

    const cancel = await call(cluster.apiA.url, `/v1/runs/${runId}/cancel`, { reason: "user_requested" });
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(202);
    expect(cancel.body).toMatchObject({ run_id: runId, status: "cancel_requested", already_terminal: false });
    const acceptedVersion = cancel.body.accepted_state_version as number;
    expect(acceptedVersion).toBeGreaterThan(0);

    const events = await stream.done;
    checkStreamShape(events);
    const types = events.map((event) => event.type);
    const requestedAt = types.indexOf("run.cancel_requested");
    expect(requestedAt).toBeGreaterThan(0);
    expect(types.at(-1)).toBe("run.cancelled");
    expect(events[requestedAt]).toMatchObject({ accepted_state_version: acceptedVersion, resume_checkpoint_id: cancel.body.resume_checkpoint_id });
    // Invariant 4: nothing published after the cancel was accepted (on the stream, nor in history).
    expect(types.slice(requestedAt)).not.toContain("message.published");
    expect(types.slice(requestedAt)).not.toContain("message.delta");
    const cancelled = events.at(-1) as Extract<RunEvent, { type: "run.cancelled" }>;
    expect(cancelled.discarded_stream_chars).toBeGreaterThan(0);
    expect(cancelled.resume_checkpoint_id).toBe(cancel.body.resume_checkpoint_id);

    const run = await waitForRun(cluster.apiB.url, runId, isTerminal);
    expect(run).toMatchObject({ status: "cancelled", cancel_reason: "user_requested", published_message_id: null, attempt: 1 });
    const history = (await call(cluster.apiB.url, `/v1/threads/${threadId}/history`)).body;
    const ofRun = history.messages.filter((message: any) => message.run_id === runId && message.role !== "user");
    expect(ofRun).toEqual([]);
    expect(history.messages.every((message: any) => message.state_version <= acceptedVersion)).toBe(true);
    // The worker that held the run named the step the Stop caught: history marks the answer as
    // interrupted, and a Continue from this checkpoint tells the model (the same checkpoint fact).
    expect(history.markers).toEqual([
      expect.objectContaining({ type: "interrupted_response", run_id: runId, checkpoint_id: cancel.body.resume_checkpoint_id }),
    ]);
    const checkpoints = (await call(cluster.apiB.url, `/v1/threads/${threadId}/checkpoints`)).body.checkpoints;
    expect(checkpoints.find((checkpoint: any) => checkpoint.checkpoint_id === cancel.body.resume_checkpoint_id)).toMatchObject({
      kind: "cancel_accepted",
      pending_step: { step_id: "model-1", kind: "model" },
      resume_policy: "regenerate_pending_step",
    });
    // The cancel reached the worker mid-generation: it streamed fewer words than the whole answer has.
    expect(events.filter(isDelta).length).toBeLessThan(Number(ENV.TIDEMARK_DEMO_WORDS));

    await expectNoViolations();
  });

  it("a client reconnecting to API B with Last-Event-ID gets every event exactly once", async () => {
    const { runId } = await startRun(cluster.apiA.url, "Stream me a long answer across two API processes");
    // Part of the stream from API A, then the connection drops mid-generation.
    const first = await readEvents(cluster.apiA.url, runId, { until: (event) => event.seq >= 12 });
    expect(first.map((event) => event.seq)).toEqual(Array.from({ length: 12 }, (_, index) => index + 1));
    const lastSeen = first.at(-1)!.seq;
    expect((await call(cluster.apiB.url, `/v1/runs/${runId}`)).body.status).toBe("running");

    // The rest from API B, after the last event seen.
    const rest = await readEvents(cluster.apiB.url, runId, { lastEventId: lastSeen });
    expect(rest[0]?.seq).toBe(lastSeen + 1);
    expect(rest.some(isDelta)).toBe(true);
    const joined = [...first, ...rest];
    checkStreamShape(joined);
    const seqs = joined.map((event) => event.seq);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, index) => index + 1));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(joined.at(-1)?.type).toBe("run.completed");

    // The same content as a full read afterwards, from either process, and as ?after= on A.
    const fullA = await readEvents(cluster.apiA.url, runId);
    const fullB = await readEvents(cluster.apiB.url, runId);
    expect(joined).toEqual(fullB);
    expect(joined).toEqual(fullA);
    expect(await readEvents(cluster.apiA.url, runId, { after: 5 })).toEqual(joined.slice(5));

    const run = await waitForRun(cluster.apiA.url, runId, isTerminal);
    expect(run.status).toBe("completed");
    const published = joined.find((event) => event.type === "message.published" && (event as any).role === "assistant");
    expect(published).toBeDefined();
    expect(run.published_message_id).toBe((published as any).message_id);
    const deltaText = joined
      .filter((event): event is Extract<RunEvent, { type: "message.delta" }> => event.type === "message.delta")
      .map((event) => event.text)
      .join("");
    const history = (await call(cluster.apiB.url, `/v1/threads/${run.thread_id}/history`)).body;
    expect(history.messages.find((message: any) => message.message_id === run.published_message_id)?.content).toBe(deltaText);

    await expectNoViolations();
  });

  it("an approval through API B reaches the worker holding the run: it sends once and completes", async () => {
    const { runId, threadId } = await startRun(cluster.apiA.url, "Please email someone@example.com about the cluster test");
    const stream = new StreamFollower(cluster.apiA.url, runId);
    const interrupted = (await stream.until((event) => event.type === "run.interrupted")) as Extract<RunEvent, { type: "run.interrupted" }>;
    expect(interrupted.tool).toBe("send_email");
    const holder = await cluster.workerIndexHolding(runId);
    expect(holder).toBeGreaterThanOrEqual(0);
    expect((await call(cluster.apiB.url, `/v1/runs/${runId}`)).body).toMatchObject({ status: "interrupted", active_operation: interrupted.op_id });

    const approve = await call(cluster.apiB.url, `/v1/runs/${runId}/approve`, {});
    expect(approve.status, JSON.stringify(approve.body)).toBe(200);
    expect(approve.body.status).toBe("running");

    const events = await stream.done;
    checkStreamShape(events);
    const types = events.map((event) => event.type);
    expect(types.indexOf("run.resumed")).toBeGreaterThan(types.indexOf("run.interrupted"));
    expect(events.find((event) => event.type === "tool.committed")).toMatchObject({ op_id: interrupted.op_id, phase: "committed" });
    expect(types.at(-1)).toBe("run.completed");
    // It stayed on the worker that paused it (the decision was forwarded, not re-executed elsewhere).
    expect(attemptOfSeq(events.at(-1)!.seq)).toBe(1);

    const run = await waitForRun(cluster.apiB.url, runId, isTerminal);
    expect(run).toMatchObject({ status: "completed", attempt: 1 });
    const operations = (await call(cluster.apiB.url, `/v1/threads/${threadId}/operations`)).body.operations as any[];
    expect(operations).toHaveLength(1);
    expect(operations[0]).toMatchObject({ op_id: interrupted.op_id, phase: "committed", idempotency_key: interrupted.idempotency_key });
    // Exactly one email in the external system.
    expect(cluster.outboxCounts().get(interrupted.idempotency_key)).toBe(1);

    // A second approval is refused truthfully: nothing waits for one any more.
    const again = await call(cluster.apiA.url, `/v1/runs/${runId}/approve`, {});
    expect(again.status).toBe(409);
    expect(cluster.outboxCounts().get(interrupted.idempotency_key)).toBe(1);

    await expectNoViolations();
  });

  it("SIGTERM drains a worker: its runs are handed back and finish on the other worker as attempt 2, on the same streams", async () => {
    const runs = await Promise.all(
      Array.from({ length: 6 }, (_, index) =>
        startRun(index % 2 === 0 ? cluster.apiA.url : cluster.apiB.url, `Drain test ${index}: write slowly, please`),
      ),
    );
    const streams = runs.map(({ runId }, index) => new StreamFollower(index % 2 === 0 ? cluster.apiB.url : cluster.apiA.url, runId));
    await Promise.all(streams.map((stream) => stream.until(isDelta)));
    const holders = await Promise.all(runs.map(({ runId }) => cluster.waitForHolder(runId)));
    // The worker holding the most of them drains.
    const victim = holders.filter((holder) => holder === 0).length >= holders.filter((holder) => holder === 1).length ? 0 : 1;
    const survivor = cluster.workers[1 - victim]!;
    const drained = runs.filter((_, index) => holders[index] === victim).map(({ runId }) => runId);
    expect(drained.length).toBeGreaterThan(0);
    for (const runId of drained) expect((await call(cluster.apiA.url, `/v1/runs/${runId}`)).body.status).toBe("running");

    const exit = await cluster.signal(cluster.workers[victim]!, "SIGTERM");
    expect(exit).toBe(0);
    // Attempt 2 of each handed-back run is claimed by the other worker.
    for (const runId of drained) {
      const second = await waitForRun(cluster.apiB.url, runId, (run) => run.attempt === 2 || isTerminal(run));
      const owner = await cluster.leaseOwner(runId);
      if (!isTerminal(second) && owner !== null) expect(owner).toBe(survivor.workerId);
    }

    const finals = await Promise.all(runs.map(({ runId }) => waitForRun(cluster.apiA.url, runId, isTerminal)));
    for (const [index, run] of finals.entries()) {
      const wasDrained = drained.includes(run.run_id);
      expect(run, `run ${index}`).toMatchObject({ status: "completed", failure_reason: null, attempt: wasDrained ? 2 : 1 });
    }
    for (const runId of drained) {
      const traces = await cluster.traces(runId);
      expect(traces.find((trace) => trace.kind === "handed_back")?.data).toMatchObject({ reason: "worker_draining" });
    }

    // Every stream went on through the hand-over to the terminal event, on the same connection.
    const allEvents = await Promise.all(streams.map((stream) => stream.done));
    for (const [index, events] of allEvents.entries()) {
      const byAttempt = checkStreamShape(events);
      expect(events.at(-1)?.type).toBe("run.completed");
      if (drained.includes(runs[index]!.runId)) {
        expect([...byAttempt.keys()]).toEqual([1, 2]);
        const second = byAttempt.get(2)!;
        expect(second[0]).toMatchObject({ type: "run.started", attempt: 2, seq: ATTEMPT_STRIDE + 1 });
        expect(second.some(isDelta)).toBe(true);
        // Attempt 1 published nothing of the unfinished answer.
        expect(byAttempt.get(1)!.some((event) => event.type === "message.published" && (event as any).role === "assistant")).toBe(false);
      } else {
        expect([...byAttempt.keys()]).toEqual([1]);
      }
    }
    expect(survivor.isAlive()).toBe(true);

    await cluster.startWorker(victim);
    await expectNoViolations();
  });
});
