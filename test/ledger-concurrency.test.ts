/**
 * The operation ledger under contention: two SqliteStore instances (two connections) on one
 * file, many actors per business key racing prepareOperation → beginCommit → finish, some
 * giving up before the commit and some being stopped by a cancel from the other connection.
 * Whatever the interleaving, each key is handed to the external system exactly once (invariant 2),
 * and never by a run whose cancel was accepted first.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkStore } from "../src/check/index.js";
import { createId, type RunRecord } from "../src/core/index.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";

const TENANT = "tenant_a";
const KEYS = 12;
const ACTORS_PER_KEY = 8;

let directory: string;
let stores: [Store, Store];
let now = 1_700_000_000_000;
/** Every store call takes its time here at call time; the transaction runs within that call, so times order transactions. */
const tick = (): number => ++now;

/** A small deterministic PRNG (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Lets the other actors (and the other connection) run between two steps. */
const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function runningRun(store: Store): Promise<RunRecord> {
  const threadId = createId("thr");
  await store.createThread({ tenantId: TENANT, threadId, checkpointId: createId("cp"), metadata: {}, now: tick() });
  const runId = createId("run");
  const created = await store.createRun({
    tenantId: TENANT,
    runId,
    threadId,
    input: { role: "user", content: "send it" },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: `hash-${runId}`,
    model: "demo",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    now: tick(),
  });
  expect(created.kind).toBe("created");
  return (await store.claimRun({ tenantId: TENANT, runId, owner: "worker", leaseExpiresAt: now + 600_000, now: tick() }))!;
}

interface Outcome {
  key: string;
  runId: string;
  /** When this actor's beginCommit was handed over, if it was. */
  committedAt: number | null;
  /** When its beginCommit was refused because the run had stopped running. */
  refusedStoppedAt: number | null;
}

/** One worker trying to perform `key` on its own run, through `store`. */
async function actor(store: Store, key: string, run: RunRecord, next: () => number): Promise<Outcome> {
  const outcome: Outcome = { key, runId: run.runId, committedAt: null, refusedStoppedAt: null };
  for (let attempt = 0; attempt < 20; attempt++) {
    await yieldTurn();
    const prepared = await store.prepareOperation({
      tenantId: TENANT,
      opId: createId("op"),
      threadId: run.threadId,
      runId: run.runId,
      toolName: "send_quote",
      toolCallId: `call_${createId("op")}`,
      idempotencyKey: key,
      input: "{}",
      preview: null,
      checkpointId: createId("cp"),
      now: tick(),
    });
    if (prepared.kind === "committed") return outcome;
    if (prepared.kind === "refused") {
      if (prepared.reason === "run_not_running") return outcome;
      continue; // in_progress elsewhere: look again later
    }
    const { opId } = prepared.operation;
    // Approval, or simply other work: the run may be stopped meanwhile.
    for (let turns = Math.floor(next() * 3); turns > 0; turns--) await yieldTurn();
    if (next() < 0.25) {
      // The user rejected it, or the run was stopped before the commit.
      await store.abandonOperation({ tenantId: TENANT, opId, now: tick() });
      continue;
    }
    const at = tick();
    const begun = await store.beginCommit({ tenantId: TENANT, opId, runId: run.runId, now: at });
    if (begun.kind === "refused") {
      if (begun.runStatus !== "running") outcome.refusedStoppedAt = at;
      await store.abandonOperation({ tenantId: TENANT, opId, now: tick() });
      return outcome;
    }
    outcome.committedAt = at;
    await yieldTurn(); // the external call
    const finished = await store.finishOperation({ tenantId: TENANT, opId, phase: "committed", result: { by: run.runId }, now: tick() });
    expect(finished?.phase).toBe("committed");
    return outcome;
  }
  return outcome;
}

describe("operation ledger across two connections", () => {
  beforeAll(() => {
    directory = fs.mkdtempSync(path.join(os.tmpdir(), "tidemark-ledger-"));
    const file = path.join(directory, "ledger.db");
    stores = [createSqliteStore({ path: file }), createSqliteStore({ path: file })];
  });

  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    fs.rmSync(directory, { recursive: true, force: true });
  });

  it("hands each key to the external system exactly once, never after an accepted cancel", async () => {
    const next = random(483);
    const work: { store: Store; key: string; run: RunRecord }[] = [];
    for (let k = 0; k < KEYS; k++) {
      for (let a = 0; a < ACTORS_PER_KEY; a++) {
        const store = stores[(k + a) % 2]!;
        work.push({ store, key: `quote:${k}:send`, run: await runningRun(store) });
      }
    }
    // A third of the runs are stopped from the other connection at a random moment.
    const cancels = work
      .filter(() => next() < 0.33)
      .map(async ({ store, run }) => {
        for (let turns = Math.floor(next() * 6); turns > 0; turns--) await yieldTurn();
        const other = stores[0] === store ? stores[1] : stores[0];
        return other.requestCancel({
          tenantId: TENANT,
          runId: run.runId,
          reason: "user_stop",
          checkpointId: createId("cp"),
          pendingStep: null,
          now: tick(),
        });
      });
    const [outcomes] = await Promise.all([
      Promise.all(work.map(({ store, key, run }) => actor(store, key, run, next))),
      Promise.all(cancels),
    ]);

    for (let k = 0; k < KEYS; k++) {
      const key = `quote:${k}:send`;
      const winners = outcomes.filter((outcome) => outcome.key === key && outcome.committedAt !== null);
      const operations = [];
      for (const { run } of work.filter((item) => item.key === key)) {
        operations.push(...(await stores[k % 2]!.listOperations(TENANT, run.threadId)));
      }
      const rows = operations.filter((operation) => operation.idempotencyKey === key);
      expect(rows.length).toBeLessThanOrEqual(1);
      const row = rows[0];
      // Every actor may have been stopped before any commit; otherwise exactly one won.
      expect(winners.length).toBeLessThanOrEqual(1);
      if (winners.length === 1) {
        expect(row).toMatchObject({ phase: "committed", commitAttempts: 1, runId: winners[0]!.runId });
      } else {
        expect(row?.commitAttempts ?? 0).toBe(0);
      }
    }

    // Never committed after a cancel was accepted; never refused before one was.
    for (const outcome of outcomes) {
      const run = (await stores[0].getRun(TENANT, outcome.runId))!;
      if (outcome.committedAt !== null && run.cancelRequestedAt !== null) {
        expect(outcome.committedAt).toBeLessThan(run.cancelRequestedAt);
      }
      if (outcome.refusedStoppedAt !== null) {
        expect(run.cancelRequestedAt).not.toBeNull();
        expect(run.cancelRequestedAt!).toBeLessThan(outcome.refusedStoppedAt);
      }
    }
    // The race was real: some keys were committed, and some commits were refused by a cancel.
    expect(outcomes.filter((outcome) => outcome.committedAt !== null).length).toBeGreaterThan(KEYS / 2);
    expect(outcomes.some((outcome) => outcome.refusedStoppedAt !== null)).toBe(true);

    const report = await checkStore(stores[1]);
    expect(report.violations).toEqual([]);
    expect(report.notApplicable).toEqual([]);
  });
});
