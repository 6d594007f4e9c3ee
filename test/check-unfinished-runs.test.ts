/**
 * `tidemark check` on real stores (SQLite and PostgreSQL): an unfinished run on a deleted thread is
 * a violation (invariant 8), and an unfinished run no worker holds for long is a stale-run warning,
 * while a run with a live lease, or one waiting behind a live run, is neither. State is built
 * through the Store API; a deleted thread with a live run (which TERMINATE must never leave) is
 * written behind the store's back with raw SQL, as a crash or a race would leave it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkStore, type CheckReport } from "../src/check/index.js";
import { createId, type RunRecord } from "../src/core/index.js";
import { adapters } from "./conformance/adapters.js";
import type { CreateRunInput, Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { createTestPostgresStore, TEST_PG_URL } from "../src/testing/postgres-test-database.js";

const TENANT = "ten_check";
const MINUTE = 60_000;
const T0 = 1_700_000_000_000;

/** A store and a way to write behind its back (`?` placeholders, as both adapters' statements use). */
interface Backend {
  store: Store;
  execute(sql: string, ...values: unknown[]): Promise<void>;
  dispose(): Promise<void>;
}

const backends: Record<string, () => Promise<Backend>> = {
  async sqlite() {
    const directory = fs.mkdtempSync(path.join(os.tmpdir(), "tidemark-check-runs-"));
    const file = path.join(directory, "store.db");
    const store = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    const raw = new Database(file);
    return {
      store,
      async execute(sql, ...values) {
        raw.prepare(sql).run(...values);
      },
      async dispose() {
        raw.close();
        await store.close();
        fs.rmSync(directory, { recursive: true, force: true });
      },
    };
  },
  async postgres() {
    const store = await createTestPostgresStore();
    const raw = new pg.Client({ connectionString: TEST_PG_URL, options: `-c search_path=${store.schema}` });
    await raw.connect();
    return {
      store,
      async execute(sql, ...values) {
        let index = 0;
        await raw.query(sql.replace(/\?/g, () => `$${++index}`), values);
      },
      async dispose() {
        await raw.end();
        await store.close();
      },
    };
  },
};

let now = T0;

function runInput(threadId: string, content: string, enqueue = false): CreateRunInput {
  return {
    tenantId: TENANT,
    runId: createId("run"),
    threadId,
    input: { role: "user", content },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: content,
    model: "demo",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    enqueue,
    now: ++now,
  };
}

async function newThread(store: Store): Promise<string> {
  const thread = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: ++now });
  return thread.threadId;
}

/** A run on `threadId` that `owner` claimed with a 15-second lease at `now`. */
async function claimedRun(store: Store, threadId: string, content: string, owner = "worker-1"): Promise<RunRecord> {
  const created = await store.createRun(runInput(threadId, content));
  if (created.kind !== "created") throw new Error(`createRun answered ${created.kind}`);
  const claimed = await store.claimRun({ tenantId: TENANT, runId: created.run.runId, owner, leaseExpiresAt: now + 15_000, now: ++now });
  if (!claimed) throw new Error("not claimed");
  return claimed;
}

const invariants = (report: CheckReport) => report.violations.map((violation) => [violation.invariant, violation.runId]);

describe.each(adapters.map((adapter) => adapter.name))("tidemark check: unfinished runs (%s)", (name) => {
  let backend: Backend;
  beforeEach(async () => {
    now = T0;
    backend = await backends[name]!();
  });
  afterEach(async () => {
    await backend.dispose();
  });

  it("reports a run still running or queued on a deleted thread (invariant 8), not one whose cancel was accepted", async () => {
    const { store } = backend;
    const threadId = await newThread(store);
    const running = await claimedRun(store, threadId, "a long answer");
    const waiting = await store.createRun(runInput(threadId, "next question", true));
    expect(waiting.kind).toBe("enqueued");
    const stopping = await newThread(store);
    const stoppingRun = await claimedRun(store, stopping, "stopped by TERMINATE");
    const accepted = await store.requestCancel({ tenantId: TENANT, runId: stoppingRun.runId, reason: "thread_terminated", checkpointId: createId("cp"), pendingStep: null, now: ++now });
    expect(accepted.kind).toBe("accepted");
    expect(invariants(await checkStore(store, { now }))).toEqual([]);

    // What TERMINATE racing a create left behind (issue 11, item 15): the threads deleted, their runs not stopped.
    for (const deleted of [threadId, stopping]) {
      await backend.execute("UPDATE threads SET status = 'deleted' WHERE tenant_id = ? AND thread_id = ?", TENANT, deleted);
    }
    const report = await checkStore(store, { now });
    expect(invariants(report)).toEqual([
      [8, running.runId],
      [8, waiting.kind === "enqueued" ? waiting.run.runId : "?"],
    ]);
    expect(report.violations[0]).toMatchObject({ threadId, detail: `run ${running.runId} is running on a deleted thread` });
    expect(report.staleRuns).toEqual([]);
  });

  it("warns about a run whose lease expired long ago, and a queued run no worker took, apart from the violations", async () => {
    const { store } = backend;
    const lost = await claimedRun(store, await newThread(store), "its worker died", "worker-dead");
    const handedBack = await claimedRun(store, await newThread(store), "its worker drained", "worker-drained");
    await store.releaseLease(TENANT, handedBack.runId, "worker-drained");
    const neverTaken = await store.createRun(runInput(await newThread(store), "nobody took it"));
    if (neverTaken.kind !== "created") throw new Error(neverTaken.kind);
    const busy = await newThread(store);
    const live = await claimedRun(store, busy, "still running");
    const behind = await store.createRun(runInput(busy, "waits behind it", true));
    if (behind.kind !== "enqueued") throw new Error(behind.kind);
    // The live worker heartbeats; the dead one never does again.
    await store.renewLeases("worker-1", T0 + 2 * 60 * MINUTE);

    const early = await checkStore(store, { now: T0 + 5 * MINUTE, staleAfterMs: 10 * MINUTE });
    expect(early.staleRuns.map((run) => run.runId)).toEqual([handedBack.runId]);
    const report = await checkStore(store, { now: T0 + 60 * MINUTE, staleAfterMs: 10 * MINUTE });
    expect(report.violations).toEqual([]);
    const stale = Object.fromEntries(report.staleRuns.map((run) => [run.runId, run.detail]));
    expect(Object.keys(stale).sort()).toEqual([lost.runId, handedBack.runId, neverTaken.run.runId].sort());
    expect(stale[lost.runId]).toBe(`run ${lost.runId} is running: its lease expired 59 min ago (${new Date(lost.leaseExpiresAt!).toISOString()})`);
    expect(stale[handedBack.runId]).toMatch(/is running: its worker handed it back and no worker has taken it since/);
    expect(stale[neverTaken.run.runId]).toMatch(/is queued: queued 59 min ago \(.*\) and no worker has taken it/);
    expect(stale).not.toHaveProperty(live.runId);
    expect(stale).not.toHaveProperty(behind.run.runId);
  });
});
