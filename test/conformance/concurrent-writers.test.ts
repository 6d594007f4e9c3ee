/**
 * Several stores on one database, writing at once, as API and worker processes do: every race is
 * decided by compare-and-set, a key has one ledger row, a thread keeps one unbroken chain of
 * checkpoints, and a queued run is claimed once. No sleeps: the calls start together and the
 * assertions hold whatever order the database chose.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkStore } from "../../src/check/index.js";
import { createId, type RunRecord } from "../../src/core/index.js";
import type { CreateRunInput, PrepareOperationInput, PublishMessageInput, RequestCancelInput, Store } from "../../src/store/store.js";
import { adapters, type SharedStores } from "./adapters.js";
import { expectKind, T0, TENANT } from "./fixtures.js";

const WRITERS = 4;

describe.each(adapters)("concurrent writers ($name)", (adapter) => {
  let shared: SharedStores;
  /** The first store: setup and reads. */
  let store: Store;
  let now: number;
  const tick = (): number => (now += 1_000);

  beforeEach(async () => {
    shared = await adapter.openShared(WRITERS);
    store = shared.stores[0]!;
    now = T0;
  });

  afterEach(async () => {
    await shared.dispose();
  });

  /** The store for the `index`-th call: calls take the writers in turn. */
  const writer = (index: number): Store => shared.stores[index % WRITERS]!;

  /** Waits for calls started together; fails with every error, so a race lost by throwing shows as such. */
  async function settle<T>(calls: Promise<T>[]): Promise<T[]> {
    const settled = await Promise.allSettled(calls);
    expect(settled.flatMap((result) => (result.status === "rejected" ? [String(result.reason)] : []))).toEqual([]);
    return settled.map((result) => (result as PromiseFulfilledResult<T>).value);
  }

  const count = <T>(items: T[], predicate: (item: T) => boolean): number => items.filter(predicate).length;

  const newThread = async (): Promise<string> =>
    (await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: tick() })).threadId;

  const runInput = (threadId: string, overrides: Partial<CreateRunInput> = {}): CreateRunInput => ({
    tenantId: TENANT,
    runId: createId("run"),
    threadId,
    input: { role: "user", content: "hello" },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: createId("run"),
    model: "demo",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    now: tick(),
    ...overrides,
  });

  const queuedRun = async (threadId?: string): Promise<RunRecord> =>
    expectKind(await store.createRun(runInput(threadId ?? (await newThread()))), "created").run;

  async function runningRun(threadId?: string): Promise<RunRecord> {
    const run = await queuedRun(threadId);
    return (await store.claimRun({ tenantId: TENANT, runId: run.runId, owner: "w0", leaseExpiresAt: now + 60_000, now: tick() }))!;
  }

  const publishInput = (run: RunRecord, overrides: Partial<PublishMessageInput> = {}): PublishMessageInput => ({
    tenantId: TENANT,
    runId: run.runId,
    messageId: createId("msg"),
    checkpointId: createId("cp"),
    role: "assistant",
    content: "an answer",
    completedStepId: createId("run"),
    stats: { llmCallCount: 1 },
    complete: false,
    now: tick(),
    ...overrides,
  });

  const cancelInput = (run: RunRecord): RequestCancelInput => ({
    tenantId: TENANT,
    runId: run.runId,
    reason: "user_stop",
    checkpointId: createId("cp"),
    pendingStep: null,
    now: tick(),
  });

  const prepareInput = (run: RunRecord, idempotencyKey: string): PrepareOperationInput => ({
    tenantId: TENANT,
    opId: createId("op"),
    threadId: run.threadId,
    runId: run.runId,
    toolName: "send_quote",
    toolCallId: createId("op"),
    idempotencyKey,
    input: "{}",
    preview: null,
    checkpointId: createId("cp"),
    now: tick(),
  });

  const finishCancelled = (s: Store, run: RunRecord) =>
    s.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested", "cancelling"], stats: {}, now: tick() });

  /** The thread's checkpoints are versions 1..N, each on the previous one, the last its head; its messages are at 0..M-1. */
  async function expectChain(threadId: string) {
    const thread = (await store.getThread(TENANT, threadId))!;
    const checkpoints = await store.listCheckpoints(TENANT, threadId);
    const messages = await store.listMessages(TENANT, threadId);
    expect(checkpoints.map((checkpoint) => checkpoint.stateVersion)).toEqual(checkpoints.map((_, index) => index + 1));
    expect(checkpoints.map((checkpoint) => checkpoint.parentCheckpointId)).toEqual([
      null,
      ...checkpoints.slice(0, -1).map((checkpoint) => checkpoint.checkpointId),
    ]);
    expect(new Set(checkpoints.map((checkpoint) => checkpoint.checkpointId)).size).toBe(checkpoints.length);
    expect(thread).toMatchObject({ stateVersion: checkpoints.length, headCheckpointId: checkpoints.at(-1)!.checkpointId });
    expect(messages.map((message) => message.position)).toEqual(messages.map((_, index) => index));
    return { thread, checkpoints, messages };
  }

  async function expectClean(): Promise<void> {
    expect((await checkStore(store)).violations).toEqual([]);
  }

  it("lets exactly one of a cancel, a completing publish and a failure win each run", async () => {
    const runs: RunRecord[] = [];
    for (let index = 0; index < 10; index++) runs.push(await runningRun());
    const races = runs.map((run, r) => {
      const publishes: { input: PublishMessageInput; result: ReturnType<Store["publishMessage"]> }[] = [];
      const cancels: ReturnType<Store["requestCancel"]>[] = [];
      const failures: ReturnType<Store["finishRun"]>[] = [];
      for (let w = 0; w < WRITERS; w++) {
        const s = writer(r + w);
        // Each kind starts first on some runs and writers.
        for (let k = 0; k < 3; k++) {
          const kind = (r + w + k) % 3;
          if (kind === 0) cancels.push(s.requestCancel(cancelInput(run)));
          if (kind === 1) {
            const input = publishInput(run, { complete: true });
            publishes.push({ input, result: s.publishMessage(input) });
          }
          if (kind === 2) {
            const input = { tenantId: TENANT, runId: run.runId, to: "failed" as const, from: ["running" as const], stats: {}, failureReason: "worker_lost" as const, now: tick() };
            failures.push(s.finishRun(input));
          }
        }
      }
      return { run, publishes, cancels, failures };
    });
    await settle<unknown>(races.flatMap((race) => [...race.publishes.map((publish) => publish.result), ...race.cancels, ...race.failures]));

    const cancelWinners: RunRecord[] = [];
    for (const race of races) {
      const published = await Promise.all(race.publishes.map((publish) => publish.result));
      const cancels = await Promise.all(race.cancels);
      const failures = await Promise.all(race.failures);
      const wins = { published: count(published, (p) => p.kind === "published"), accepted: count(cancels, (c) => c.kind === "accepted"), failed: count(failures, (f) => f !== undefined) };
      expect(wins.published + wins.accepted + wins.failed).toBe(1);
      const { thread, messages } = await expectChain(race.run.threadId);
      const run = (await store.getRun(TENANT, race.run.runId))!;
      const winner = race.publishes.find((_, index) => published[index]!.kind === "published");

      if (wins.published) {
        expect(run.status).toBe("completed");
        expect(cancels.map((c) => c.kind)).toEqual(cancels.map(() => "already_terminal"));
      } else if (wins.accepted) {
        expect(run.status).toBe("cancel_requested");
        expect(cancels.map((c) => c.kind).sort()).toEqual(["accepted", ...cancels.slice(1).map(() => "already_requested")]);
        cancelWinners.push(run);
      } else {
        expect(run).toMatchObject({ status: "failed", failureReason: "worker_lost" });
        expect(cancels.map((c) => c.kind)).toEqual(cancels.map(() => "already_terminal"));
      }
      // A publish that lost wrote nothing: one version per accepted write, only the winner's message.
      expect(thread.stateVersion).toBe(race.run.stateVersion + wins.published + wins.accepted);
      expect(messages.map((message) => message.messageId)).toEqual([race.run.inputMessageId, ...(winner ? [winner.input.messageId] : [])]);
    }

    // The worker's confirmation of each accepted cancel, sent from every store: one write wins.
    const confirmations = await settle(cancelWinners.map((run, r) => settle(shared.stores.map((_, w) => finishCancelled(writer(r + w), run)))));
    for (const perRun of confirmations) expect(perRun.map((finished) => finished?.status).filter(Boolean)).toEqual(["cancelled"]);
    for (const race of races) {
      expect(["completed", "failed", "cancelled"]).toContain((await store.getRun(TENANT, race.run.runId))!.status);
      expect((await store.getThread(TENANT, race.run.threadId))!.activeRunId).toBeNull();
    }
    await expectClean();
  });

  it("gives one idempotency key one prepared operation and one commit, across threads", async () => {
    const runs: RunRecord[] = [];
    for (let index = 0; index < 4; index++) runs.push(await runningRun());
    const key = "quote:1:send";
    const prepares = await settle(runs.flatMap((run, r) => Array.from({ length: 2 * WRITERS }, (_, w) => writer(r + w).prepareOperation(prepareInput(run, key)))));

    expect(count(prepares, (p) => p.kind === "prepared")).toBe(1);
    const winner = prepares.find((p) => p.kind === "prepared")!;
    if (winner.kind !== "prepared") throw new Error("unreachable");
    const operation = winner.operation;
    for (const loser of prepares.filter((p) => p !== winner)) {
      expect(loser).toMatchObject({ kind: "refused", reason: "in_progress", operation: { opId: operation.opId } });
    }
    const owner = runs.find((run) => run.runId === operation.runId)!;
    for (const run of runs) {
      const { thread } = await expectChain(run.threadId);
      expect(thread.stateVersion).toBe(run.stateVersion + (run === owner ? 1 : 0));
      expect((await store.listOperations(TENANT, run.threadId)).map((op) => op.opId)).toEqual(run === owner ? [operation.opId] : []);
    }

    const begins = await settle(Array.from({ length: 4 * WRITERS }, (_, w) => writer(w).beginCommit({ tenantId: TENANT, opId: operation.opId, runId: owner.runId, now: tick() })));
    expect(count(begins, (b) => b.kind === "committing")).toBe(1);
    for (const begun of begins.filter((b) => b.kind !== "committing")) {
      expect(begun).toMatchObject({ kind: "refused", runStatus: "running", operation: { phase: "committing", commitAttempts: 1 } });
    }
    expect((await store.getRun(TENANT, owner.runId))!.activeOperation).toBe(operation.opId);

    const finishes = await settle(
      Array.from({ length: 2 * WRITERS }, (_, w) =>
        writer(w).finishOperation(
          w % 2 === 0
            ? { tenantId: TENANT, opId: operation.opId, phase: "committed", result: { writer: w }, now: tick() }
            : { tenantId: TENANT, opId: operation.opId, phase: "failed", error: `writer ${w}`, now: tick() },
        ),
      ),
    );
    expect(count(finishes, (f) => f !== undefined)).toBe(1);
    const finished = finishes.find((f) => f !== undefined)!;
    expect(finished.commitAttempts).toBe(1);
    expect(await store.getOperation(TENANT, operation.opId)).toEqual(finished);
    expect((await store.getRun(TENANT, owner.runId))!.activeOperation).toBeNull();

    // The key again, from every other run at once: a committed key is reused, a failed one taken up once.
    const others = runs.filter((run) => run !== owner);
    const again = await settle(others.flatMap((run, r) => shared.stores.map((_, w) => writer(r + w).prepareOperation(prepareInput(run, key)))));
    if (finished.phase === "committed") {
      for (const result of again) expect(result).toMatchObject({ kind: "committed", operation: { opId: operation.opId, result: finished.result } });
      for (const run of others) expect((await store.getThread(TENANT, run.threadId))!.stateVersion).toBe(run.stateVersion);
    } else {
      expect(count(again, (p) => p.kind === "prepared")).toBe(1);
      const retaken = again.find((p) => p.kind === "prepared")!;
      expect(retaken).toMatchObject({ operation: { opId: operation.opId, phase: "prepared", commitAttempts: 0 } });
      for (const loser of again.filter((p) => p !== retaken)) expect(loser).toMatchObject({ kind: "refused", reason: "in_progress", operation: { opId: operation.opId } });
    }
    for (const run of runs) await expectChain(run.threadId);
    await expectClean();
  });

  it("keeps one unbroken checkpoint chain on a thread written from every store at once", async () => {
    const threadId = await newThread();
    const run = await runningRun(threadId);
    const forkPoint = (await store.getThread(TENANT, threadId))!;

    // While the run publishes and prepares from every store, others fork it, knock, enqueue and try a fragment.
    const [publishes, prepares, forks, creates, enqueues, fragments] = await Promise.all([
      settle(Array.from({ length: 40 }, (_, i) => writer(i).publishMessage(publishInput(run)))),
      settle(Array.from({ length: 8 }, (_, i) => writer(i).prepareOperation(prepareInput(run, `key-${i}`)))),
      settle(Array.from({ length: WRITERS }, (_, i) => writer(i).forkThread({ tenantId: TENANT, sourceThreadId: threadId, fromCheckpointId: forkPoint.headCheckpointId, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: tick() }))),
      settle(Array.from({ length: 8 }, (_, i) => writer(i).createRun(runInput(threadId)))),
      settle(Array.from({ length: 8 }, (_, i) => writer(i).createRun(runInput(threadId, { enqueue: true })))),
      settle(Array.from({ length: WRITERS }, (_, i) => writer(i).saveFragment({ tenantId: TENANT, runId: run.runId, messageId: createId("msg"), checkpointId: createId("cp"), content: "x", now: tick() }))),
    ]);
    expect(publishes.map((p) => p.kind)).toEqual(publishes.map(() => "published"));
    expect(prepares.map((p) => p.kind)).toEqual(prepares.map(() => "prepared"));
    expect(forks.map((f) => f.kind)).toEqual(forks.map(() => "forked"));
    expect(creates.map((c) => c.kind)).toEqual(creates.map(() => "run_in_progress"));
    expect(enqueues.map((e) => e.kind)).toEqual(enqueues.map(() => "enqueued"));
    expect(fragments.map((f) => f.kind)).toEqual(fragments.map(() => "run_not_terminal"));
    let chain = await expectChain(threadId);
    expect(chain.thread.stateVersion).toBe(forkPoint.stateVersion + 40 + 8);
    const written = [...publishes, ...prepares].map((result) => ("checkpoint" in result ? result.checkpoint : undefined));
    const stored = new Map(chain.checkpoints.map((checkpoint) => [checkpoint.checkpointId, checkpoint]));
    for (const checkpoint of written) expect(stored.get(checkpoint!.checkpointId)).toEqual(checkpoint);
    expect(chain.messages).toHaveLength(41);
    expect(chain.thread.stats).toMatchObject({ messageCount: 41, llmCallCount: 40 });
    for (const fork of forks) {
      if (fork.kind !== "forked") continue;
      expect(fork.checkpoint).toMatchObject({ stateVersion: forkPoint.stateVersion + 1, parentCheckpointId: forkPoint.headCheckpointId });
      await expectChain(fork.thread.threadId);
    }
    await settle(prepares.map((p, i) => (p.kind === "prepared" ? writer(i).abandonOperation({ tenantId: TENANT, opId: p.operation.opId, now: tick() }) : Promise.resolve(undefined))));

    // A Stop racing the last publishes: one cancel accepted, every publish before it kept, none after.
    const lastInputs = Array.from({ length: 8 }, () => publishInput(run));
    const [lastPublishes, cancels] = await Promise.all([
      settle(lastInputs.map((input, i) => writer(i).publishMessage(input))),
      settle(Array.from({ length: WRITERS }, (_, i) => writer(i + 1).requestCancel(cancelInput(run)))),
    ]);
    expect(cancels.map((c) => c.kind).sort()).toEqual(["accepted", "already_requested", "already_requested", "already_requested"]);
    const late = count(lastPublishes, (p) => p.kind === "published");
    expect(count(lastPublishes, (p) => p.kind === "rejected")).toBe(8 - late);
    chain = await expectChain(threadId);
    expect(chain.thread.stateVersion).toBe(forkPoint.stateVersion + 48 + late + 1);
    const kept = new Set(chain.messages.map((message) => message.messageId));
    expect(lastInputs.map((input) => kept.has(input.messageId))).toEqual(lastPublishes.map((p) => p.kind === "published"));
    expect(chain.checkpoints.at(-1)!.kind).toBe("cancel_accepted");
    expect(count(await settle(shared.stores.map((s) => finishCancelled(s, run))), (f) => f !== undefined)).toBe(1);

    // The thread is free: one fragment of the stopped run and one admission race for it.
    const fragmentId = createId("msg");
    const [saves, admissions] = await Promise.all([
      settle(shared.stores.map((s) => s.saveFragment({ tenantId: TENANT, runId: run.runId, messageId: fragmentId, checkpointId: createId("cp"), content: "partial", now: tick() }))),
      settle(shared.stores.map((s) => s.admitNextRun(TENANT, threadId, createId("cp"), tick()))),
    ]);
    expect(count(saves, (s) => s.kind === "saved")).toBeLessThanOrEqual(1);
    for (const save of saves) expect(["saved", "exists", "run_in_progress", "thread_moved_on"]).toContain(save.kind);
    const waiting = enqueues.flatMap((e) => (e.kind === "enqueued" ? [e.run] : [])).sort((a, b) => a.createdAt - b.createdAt);
    const admittedOrder = admissions.filter((a) => a !== undefined).map((a) => a.runId);
    expect(admittedOrder).toEqual([waiting[0]!.runId]);

    // Drain the queue: each run completes, then every store tries to admit the next at once.
    for (let index = 1; index < waiting.length; index++) {
      const active = (await store.claimRun({ tenantId: TENANT, runId: admittedOrder.at(-1)!, owner: "w0", leaseExpiresAt: now + 60_000, now: tick() }))!;
      expectKind(await writer(index).publishMessage(publishInput(active, { complete: true })), "published");
      const admitted = (await settle(shared.stores.map((s) => s.admitNextRun(TENANT, threadId, createId("cp"), tick())))).filter((a) => a !== undefined);
      expect(admitted).toHaveLength(1);
      admittedOrder.push(admitted[0]!.runId);
    }
    expect(admittedOrder).toEqual(waiting.map((w) => w.runId));
    chain = await expectChain(threadId);
    expect(chain.thread.activeRunId).toBe(waiting.at(-1)!.runId);
    await expectClean();
  });

  it("claims each queued run exactly once from several stores at once", async () => {
    const queued: RunRecord[] = [];
    for (let index = 0; index < 40; index++) queued.push(await queuedRun());
    const waiting = await Promise.all(queued.slice(0, 4).map(async (run) => expectKind(await store.createRun(runInput(run.threadId, { enqueue: true })), "enqueued").run));
    const direct = queued.filter((_, index) => index % 4 === 1);

    const claims = new Map<string, string[]>();
    const record = (owner: string, runs: (RunRecord | undefined)[]) => {
      for (const run of runs) if (run) claims.set(run.runId, [...(claims.get(run.runId) ?? []), owner]);
    };
    const drain = async (s: Store, owner: string) => {
      for (let round = 0; round < 60; round++) {
        const claimed = await s.claimQueuedRuns({ owner, leaseExpiresAt: now + 60_000, limit: 3, now: tick() });
        record(owner, claimed);
        if (claimed.length === 0) return;
      }
      throw new Error(`${owner} never ran out of queued runs`);
    };
    await settle([
      ...shared.stores.map((s, w) => drain(s, `w${w}`)),
      ...direct.map((run, i) => writer(i).claimRun({ tenantId: TENANT, runId: run.runId, owner: "direct", leaseExpiresAt: now + 60_000, now: tick() }).then((claimed) => record("direct", [claimed]))),
    ]);

    expect([...claims.keys()].sort()).toEqual(queued.map((run) => run.runId).sort());
    expect([...claims.values()].filter((owners) => owners.length !== 1)).toEqual([]);
    for (const run of queued) {
      expect(await store.getRun(TENANT, run.runId)).toMatchObject({ status: "running", leaseOwner: claims.get(run.runId)![0] });
    }
    for (const run of waiting) expect(await store.getRun(TENANT, run.runId)).toMatchObject({ status: "queued", isWaiting: true, leaseOwner: null });
    await expectClean();
  });

  it("lets a plan's steps be written from every store at once, then its cancel close them", async () => {
    const run = await runningRun();
    const stepIds = Array.from({ length: 12 }, (_, index) => `step-${index}`);
    const [, completions, publications] = await Promise.all([
      // The journal registers each step (no ordinal: the store gives the next) while its work lands.
      settle(stepIds.map((stepId, i) => writer(i).saveSteps({ tenantId: TENANT, runId: run.runId, steps: [{ stepId, status: "in_progress", startedAt: now }] }))),
      settle(stepIds.filter((_, i) => i % 2 === 0).map((stepId, i) =>
        writer(i).completeStep({ tenantId: TENANT, runId: run.runId, stepId, checkpointId: createId("cp"), result: `"${stepId}"`, now: tick() }),
      )),
      settle(stepIds.filter((_, i) => i % 2 === 1).map((stepId, i) =>
        writer(i + 1).publishMessage(publishInput(run, { completedStepId: stepId, recordsStep: true })),
      )),
      settle(shared.stores.map((s) => s.saveSteps({ tenantId: TENANT, runId: run.runId, steps: [{ stepId: "later", status: "not_started" }] }))),
    ]);
    expect(completions.map((c) => c.kind)).toEqual(Array(6).fill("completed"));
    expect(publications.map((p) => p.kind)).toEqual(Array(6).fill("published"));

    const steps = await store.listRunSteps(TENANT, run.runId);
    expect(steps.map((step) => step.ordinal)).toEqual(steps.map((_, index) => index));
    expect(steps.map((step) => step.stepId).sort()).toEqual([...stepIds, "later"].sort());
    expect(steps.filter((step) => step.checkpointId !== null)).toHaveLength(12);
    const chain = await expectChain(run.threadId);
    expect(chain.thread.stateVersion).toBe(run.stateVersion + 12);

    // Every step's work is durable: each is marked completed, then a Stop and the worker's finish race the journal.
    await store.saveSteps({ tenantId: TENANT, runId: run.runId, steps: stepIds.map((stepId) => ({ stepId, status: "completed" as const, endedAt: now })) });
    await settle<unknown>([
      ...shared.stores.map((s) => s.requestCancel({ tenantId: TENANT, runId: run.runId, reason: "user_stop", checkpointId: createId("cp"), pendingStep: null, now: tick() })),
      ...shared.stores.map((s) => s.saveSteps({ tenantId: TENANT, runId: run.runId, steps: [{ stepId: "later", status: "in_progress", startedAt: now }] })),
    ]);
    const finishes = await settle(
      shared.stores.map((s) => s.finishRun({ tenantId: TENANT, runId: run.runId, to: "cancelled", from: ["cancel_requested"], stats: {}, now: tick() })),
    );
    expect(count(finishes, (finish) => finish !== undefined)).toBe(1);
    const after = await store.listRunSteps(TENANT, run.runId);
    expect(after.filter((step) => step.stepId !== "later").map((step) => step.status)).toEqual(Array(12).fill("completed"));
    expect(after.find((step) => step.stepId === "later")?.status).toBe("cancelled");
    await expectClean();
  });
});
