/**
 * The cluster over a real PostgreSQL: events written by one process reach another's hub gapless
 * and in order (across attempts, and through the fallback read when no NOTIFY comes), control
 * messages and wake-ups reach every process, and only ended runs' logs are pruned.
 */
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createId, type RunEvent, type RunEventDraft } from "../../../core/index.js";
import type { Logger } from "../../../core/logger.js";
import { EventHub, type RunEventBuffer } from "../../../stream/index.js";
import { createTestPostgresStore, TEST_PG_URL } from "../../../testing/postgres-test-database.js";
import type { Store } from "../../index.js";
import type { Cluster, ControlMessage } from "../../../runtime/cluster.js";
import { createPgCluster } from "./pg-cluster.js";

const T = "tenant_a";
let store: Store & { schema: string };
let writer: Cluster;
let reader: Cluster;

beforeEach(async () => {
  store = await createTestPostgresStore();
  writer = await createPgCluster({ url: TEST_PG_URL, schema: store.schema, eventPollMs: 50 });
  reader = await createPgCluster({ url: TEST_PG_URL, schema: store.schema, eventPollMs: 50 });
});

afterEach(async () => {
  await writer.close();
  await reader.close();
  await store.close();
});

/** A writer-side emitter: appends to the writer's hub and publishes, as the runtime does. */
function emitterFor(hub: EventHub, runId: string, attempt: number): (draft: RunEventDraft) => RunEvent {
  const buffer = hub.ensure(T, runId, attempt);
  return (draft) => {
    const event = buffer.append(draft);
    writer.publishEvent(T, event);
    return event;
  };
}

/** Resolves once `buffer` holds `seq` (or it ended). */
function until(buffer: RunEventBuffer, predicate: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (predicate()) return resolve();
    const unsubscribe = buffer.subscribe(() => {
      if (predicate()) {
        unsubscribe();
        resolve();
      }
    });
  });
}

const delta = (runId: string, text: string): RunEventDraft => ({ type: "message.delta", run_id: runId, message_id: "msg_1", text });

/** A connection of its own to the test database: writes to the shared log behind the clusters' backs. */
async function openLog(): Promise<{ client: pg.Client; insert<E extends { seq: number }>(runId: string, event: E): Promise<unknown>; close(): Promise<void> }> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  return {
    client,
    insert: (runId, event) =>
      client.query(`INSERT INTO ${store.schema}.run_events (tenant_id, run_id, seq, event, at) VALUES ($1, $2, $3, $4, 0)`, [T, runId, event.seq, JSON.stringify(event)]),
    close: () => client.end(),
  };
}

/** The next warning a test's cluster logs goes here. */
let onWarning: ((message: string) => void) | undefined;
const warningLogger: Logger = { info: () => {}, error: () => {}, warn: (_fields, message) => onWarning?.(message) };

describe("PgCluster", () => {
  it("fans a run's events out to another process, gapless and in order, to the terminal event", async () => {
    const runId = createId("run");
    const writerHub = new EventHub();
    const emit = emitterFor(writerHub, runId, 1);
    emit({ type: "run.started", run_id: runId, thread_id: "thr_x", attempt: 1, status: "running" });
    for (let index = 0; index < 50; index++) emit(delta(runId, `w${index} `));
    const readerHub = new EventHub();
    // Joins mid-stream and waits for what was already sent.
    const buffer = await reader.follow(readerHub, T, runId, 1, 51);
    expect(buffer.lastSeq).toBe(51);
    for (let index = 50; index < 200; index++) emit(delta(runId, `w${index} `));
    emit({ type: "run.completed", run_id: runId, published_message_id: "msg_1", stats: {} } as unknown as RunEventDraft);
    await buffer.whenTerminal();
    const events = buffer.eventsBetween(0, buffer.lastSeq);
    expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 202 }, (_, index) => index + 1));
    expect(events).toEqual(writerHub.get(T, runId)!.eventsBetween(0, 202));
    writerHub.clear();
    readerHub.clear();
  });

  it("moves a follower to the next attempt, and the earlier buffer names its successor", async () => {
    const runId = createId("run");
    const writerHub = new EventHub();
    const readerHub = new EventHub();
    const first = emitterFor(writerHub, runId, 1);
    first({ type: "run.started", run_id: runId, thread_id: "thr_x", attempt: 1, status: "running" });
    first(delta(runId, "before the handover"));
    const buffer = await reader.follow(readerHub, T, runId, 1, 2);
    const second = emitterFor(writerHub, runId, 2);
    second({ type: "run.started", run_id: runId, thread_id: "thr_x", attempt: 2, status: "running" });
    await until(buffer, () => buffer.successor !== undefined);
    const next = buffer.successor!;
    await until(next, () => next.lastSeq >= 1_000_000_001);
    expect(next.firstSeq).toBe(1_000_000_001);
    expect(next.eventsBetween(0, next.lastSeq)[0]).toMatchObject({ type: "run.started", attempt: 2 });
    writerHub.clear();
    readerHub.clear();
  });

  it("catches up through the fallback read when no notification names the run", async () => {
    const runId = createId("run");
    const readerHub = new EventHub();
    const buffer = await reader.follow(readerHub, T, runId, 1);
    expect(buffer.isEmpty).toBe(true);
    // Written behind the cluster's back: no NOTIFY.
    const log = await openLog();
    try {
      await log.insert(runId, { type: "run.started", run_id: runId, thread_id: "thr_x", attempt: 1, status: "running", seq: 1 });
    } finally {
      await log.close();
    }
    await until(buffer, () => buffer.lastSeq === 1);
    expect(buffer.eventsBetween(0, 1)[0]).toMatchObject({ type: "run.started", seq: 1 });
    readerHub.clear();
  });

  it("appends the events a notice carries without reading them back, and reads the log where one does not follow on", async () => {
    const runId = createId("run");
    const readerHub = new EventHub();
    const buffer = await reader.follow(readerHub, T, runId, 1);
    const event = (seq: number, text: string) => JSON.stringify({ ...delta(runId, text), seq });
    const log = await openLog();
    const notify = (events: [number, string][]) =>
      log.client.query("SELECT pg_notify($1, $2)", [`tidemark_${store.schema}_events`, JSON.stringify({ events: events.map(([seq, json]) => [T, runId, seq, json]) })]);
    try {
      // Seq 1 is nowhere in the log: only the notice can have delivered it.
      await notify([[1, event(1, "carried")]]);
      await until(buffer, () => buffer.lastSeq === 1);
      expect(buffer.eventsBetween(0, 1)[0]).toMatchObject({ seq: 1, text: "carried" });
      // Seq 2 was missed: a notice with seq 3 alone is not appended over the gap; the log is read instead.
      for (const [seq, text] of [[2, "from the log"], [3, "from the log too"]] as const) {
        await log.insert(runId, { ...delta(runId, text), seq });
      }
      await notify([[3, event(3, "not this copy")]]);
      await until(buffer, () => buffer.lastSeq === 3);
      expect(buffer.eventsBetween(1, 3).map((appended) => (appended as { text?: string }).text)).toEqual(["from the log", "from the log too"]);
    } finally {
      await log.close();
    }
    readerHub.clear();
  });

  it("drops a process's events of a run whose log another process wrote meanwhile: nothing lands after that writer's terminal event", async () => {
    // The recoverer (another process, standing in here as direct writes) continued the run's
    // attempt from the log while this process could not reach the database, and ended it.
    const runId = createId("run");
    const warned = new Promise<string>((resolve) => (onWarning = resolve));
    const lateWriter = await createPgCluster({ url: TEST_PG_URL, schema: store.schema, eventPollMs: 50, logger: warningLogger });
    let isLateWriterClosed = false;
    const log = await openLog();
    try {
      await log.insert(runId, { type: "run.started", run_id: runId, thread_id: "thr_x", attempt: 1, status: "running", seq: 1 });
      await log.insert(runId, { type: "run.cancelled", run_id: runId, reason: "user_requested", seq: 2 });
      const readerHub = new EventHub();
      const buffer = await reader.follow(readerHub, T, runId, 1, 2);
      // This process's own events of the attempt, emitted before it lost the run, reach the database only now.
      lateWriter.publishEvent(T, { type: "run.cancel_requested", run_id: runId, reason: "user_requested", seq: 2 } as unknown as RunEvent);
      lateWriter.publishEvent(T, { ...delta(runId, "after the end"), seq: 3 } as unknown as RunEvent);
      expect(await warned).toContain("another process wrote their run's log");
      // What it emits later for that attempt is dropped too; what is pending is written at its close.
      lateWriter.publishEvent(T, { ...delta(runId, "later still"), seq: 4 } as unknown as RunEvent);
      await lateWriter.close();
      isLateWriterClosed = true;
      const { rows } = await log.client.query<{ seq: string; event: string }>(`SELECT seq, event FROM ${store.schema}.run_events WHERE run_id = $1 ORDER BY seq`, [runId]);
      expect(rows.map((row) => [Number(row.seq), (JSON.parse(row.event) as RunEvent).type])).toEqual([
        [1, "run.started"],
        [2, "run.cancelled"],
      ]);
      expect(buffer.terminalEvent).toMatchObject({ seq: 2, type: "run.cancelled" });
      expect(buffer.lastSeq).toBe(2);
      readerHub.clear();
    } finally {
      await log.close();
      if (!isLateWriterClosed) await lateWriter.close();
    }
  });

  it("a batch the log already holds (its commit's answer was lost) is its own, not another writer's: the run's next events are written", async () => {
    const runId = createId("run");
    const events = [
      { type: "run.started", run_id: runId, thread_id: "thr_x", attempt: 1, status: "running", seq: 1 },
      { ...delta(runId, "committed, answer lost"), seq: 2 },
      { ...delta(runId, "the next one"), seq: 3 },
    ] as unknown as RunEvent[];
    const log = await openLog();
    try {
      // The first two are in the log exactly as this process sends them.
      for (const event of events.slice(0, 2)) await log.insert(runId, event);
      for (const event of events) writer.publishEvent(T, event);
      const hub = new EventHub();
      const buffer = await reader.follow(hub, T, runId, 1, 3);
      expect(buffer.lastSeq).toBe(3);
      writer.publishEvent(T, { ...delta(runId, "and after"), seq: 4 } as unknown as RunEvent);
      await until(buffer, () => buffer.lastSeq === 4);
      expect(buffer.eventsBetween(0, 4).map((event) => (event as { text?: string }).text ?? event.type)).toEqual(["run.started", "committed, answer lost", "the next one", "and after"]);
      hub.clear();
    } finally {
      await log.close();
    }
  });

  it("a follower ignores what a log holds after its run's terminal event, and says so", async () => {
    const runId = createId("run");
    const warned = new Promise<string>((resolve) => (onWarning = resolve));
    const follower = await createPgCluster({ url: TEST_PG_URL, schema: store.schema, eventPollMs: 50, logger: warningLogger });
    const log = await openLog();
    try {
      const events = [
        { type: "run.started", run_id: runId, thread_id: "thr_x", attempt: 1, status: "running", seq: 1 },
        { type: "run.cancelled", run_id: runId, reason: "user_requested", seq: 2 },
        { ...delta(runId, "written after the end by a process that had lost the run"), seq: 3 },
      ];
      for (const event of events) await log.insert(runId, event);
      const hub = new EventHub();
      const buffer = await follower.follow(hub, T, runId, 1);
      expect(buffer.terminalEvent).toMatchObject({ seq: 2, type: "run.cancelled" });
      expect(buffer.lastSeq).toBe(2);
      expect(await warned).toContain("after the terminal one");
      hub.clear();
    } finally {
      await log.close();
      await follower.close();
    }
  });

  it("delivers control messages and wake-ups to every process", async () => {
    const received = new Promise<ControlMessage>((resolve) => reader.onControl(resolve));
    const woken = new Promise<void>((resolve) => reader.onQueued(resolve));
    const message: ControlMessage = { kind: "cancel", tenantId: T, runId: createId("run"), reason: "user_requested", stateVersion: 3, checkpointId: "cp_x" };
    await writer.sendControl(message);
    writer.announceQueued();
    expect(await received).toEqual(message);
    await woken;
  });

  it("prunes the logs of runs that ended before the cutoff, and only those", async () => {
    const thread = await store.createThread({ tenantId: T, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: 1 });
    const runs = [];
    for (const name of ["ended", "active"]) {
      const runId = createId("run");
      const created = await store.createRun({
        tenantId: T,
        runId,
        threadId: thread.threadId,
        input: { role: "user", content: name },
        inputMessageId: createId("msg"),
        checkpointId: createId("cp"),
        idempotencyKey: null,
        requestHash: name,
        model: "demo",
        onDisconnect: "continue",
        recoveryPolicy: "fail",
        expectedStateVersion: null,
        enqueue: true,
        now: 2,
      });
      expect(["created", "enqueued"]).toContain(created.kind);
      runs.push(runId);
    }
    await store.requestCancel({ tenantId: T, runId: runs[0]!, reason: "test", checkpointId: createId("cp"), pendingStep: null, now: 3 });
    const hub = new EventHub();
    for (const runId of runs) emitterFor(hub, runId, 1)({ type: "run.started", run_id: runId, thread_id: thread.threadId, attempt: 1, status: "queued" });
    await writer.close();
    writer = await createPgCluster({ url: TEST_PG_URL, schema: store.schema });
    expect(await writer.pruneEvents(Date.now())).toBe(1);
    const readerHub = new EventHub();
    expect((await reader.follow(readerHub, T, runs[1]!, 1)).lastSeq).toBe(1);
    hub.clear();
    readerHub.clear();
  });
});
