/**
 * What only the PostgreSQL adapter has: its migrations on an existing schema, and its round trips
 * (each one costs a network hop, so the per-step writes are held to a count). The contract itself
 * is tested on every adapter by the conformance suite (test/conformance/).
 */
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { checkStore } from "../../check/index.js";
import { createId } from "../../core/index.js";
import { dropTestSchema, newTestSchemaName, TEST_PG_URL } from "../../testing/postgres-test-database.js";
import { SqlStore } from "../sql/sql-store.js";
import type { Store } from "../store.js";
import { PgDriver } from "./pg-driver.js";
import { createPool, createPostgresStore, openWarmConnections } from "./postgres-store.js";
import { PG_MIGRATIONS } from "./schema.js";
import { claimedRunOnNewThread } from "../../../test/support/store-fixtures.js";

const TENANT = "tenant_a";
const T0 = 1_700_000_000_000;

let schema: string;

beforeEach(() => {
  schema = newTestSchemaName("tm_pgstore");
});

afterEach(async () => {
  await dropTestSchema(schema);
});

/** Runs `sql` in the test's schema on a connection of its own. */
async function admin(sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    await client.query(`SET search_path = ${schema}`);
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A running run on a new thread of `store`. */
async function runningRun(store: Store, threadId: string, now: number): Promise<string> {
  return (await claimedRunOnNewThread(store, { tenantId: TENANT, threadId, now })).runId;
}

const publishInput = (runId: string, completedStepId: string, now: number) => ({
  tenantId: TENANT,
  runId,
  messageId: createId("msg"),
  checkpointId: createId("cp"),
  role: "assistant" as const,
  content: `the answer of ${completedStepId}`,
  completedStepId,
  stats: {},
  now,
});

describe("migration 3 (agents and plan steps)", () => {
  it("upgrades a version-2 schema in place: its runs are `chat` without config, its messages unlabelled", async () => {
    const writer = await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 2 });
    const runId = await runningRun(writer, "thr_old", T0);
    await writer.publishMessage({ ...publishInput(runId, "step-1", T0 + 3), complete: true });
    await writer.close();
    // The schema as version 2 left it: without migration 3's columns, table and record.
    await admin(`
      DROP TABLE run_steps;
      DROP INDEX runs_unfinished_by_tenant;
      ALTER TABLE runs DROP COLUMN agent, DROP COLUMN config, DROP COLUMN instructions, DROP COLUMN metadata;
      ALTER TABLE messages DROP COLUMN label, DROP COLUMN interrupted;
      DELETE FROM schema_migrations WHERE version >= 3;
    `);

    const store = await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 2 });
    try {
      expect(await store.getRun(TENANT, runId)).toMatchObject({ status: "completed", agent: "chat", config: null, instructions: null, metadata: {} });
      expect((await store.listMessages(TENANT, "thr_old")).map((message) => message.label)).toEqual([null, null]);
      const next = await runningRun(store, "thr_new", T0 + 10_000);
      await store.saveSteps({ tenantId: TENANT, runId: next, steps: [{ stepId: "a", status: "in_progress" }] });
      await store.finishRun({ tenantId: TENANT, runId: next, to: "failed", from: ["running"], stats: {}, now: T0 + 10_010 });
      expect((await store.listRunSteps(TENANT, next)).map((step) => step.status)).toEqual(["failed"]);
      expect((await checkStore(store)).violations).toEqual([]);
    } finally {
      await store.close();
    }
    const { rows } = await admin("SELECT MAX(version) AS version FROM schema_migrations");
    expect(rows[0]).toEqual({ version: PG_MIGRATIONS.at(-1)!.version });
  });
});

describe("migration 4 (live turns)", () => {
  it("upgrades a version-3 schema in place: its messages are not interrupted, and a heard answer can be published", async () => {
    const writer = await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 2 });
    const runId = await runningRun(writer, "thr_old", T0);
    await writer.publishMessage({ ...publishInput(runId, "step-1", T0 + 3), complete: true });
    await writer.close();
    // The schema as version 3 left it: without what migrations 4 to 6 added, and their records.
    await admin(`
      ALTER TABLE messages DROP COLUMN interrupted;
      DROP INDEX runs_unfinished_by_tenant;
      ALTER TABLE runs DROP COLUMN instructions, DROP COLUMN metadata;
      DELETE FROM schema_migrations WHERE version >= 4;
    `);

    const store = await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 2 });
    try {
      expect((await store.listMessages(TENANT, "thr_old")).map((message) => message.interrupted)).toEqual([false, false]);
      const live = await runningRun(store, "thr_live", T0 + 10_000);
      const accepted = await store.requestCancel({
        tenantId: TENANT,
        runId: live,
        reason: "user_speech",
        checkpointId: "cp_heard",
        pendingStep: null,
        now: T0 + 10_010,
        heard: { messageId: "msg_heard", content: "Hello th" },
      });
      expect(accepted).toMatchObject({ kind: "accepted", heardMessage: { content: "Hello th", interrupted: true } });
      expect((await store.listMessages(TENANT, "thr_live")).at(-1)).toMatchObject({ messageId: "msg_heard", content: "Hello th", interrupted: true, checkpointId: "cp_heard" });
      expect((await checkStore(store)).violations).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe("migration 6 (run instructions and metadata)", () => {
  it("upgrades a version-5 schema in place: its runs have no instructions and empty metadata", async () => {
    const writer = await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 2 });
    const runId = await runningRun(writer, "thr_old", T0);
    await writer.publishMessage({ ...publishInput(runId, "step-1", T0 + 3), complete: true });
    await writer.close();
    await admin("ALTER TABLE runs DROP COLUMN instructions, DROP COLUMN metadata; DELETE FROM schema_migrations WHERE version >= 6;");

    const store = await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 2 });
    try {
      expect(await store.getRun(TENANT, runId)).toMatchObject({ status: "completed", instructions: null, metadata: {} });
      expect((await checkStore(store)).violations).toEqual([]);
    } finally {
      await store.close();
    }
    const { rows } = await admin("SELECT MAX(version) AS version FROM schema_migrations");
    expect(rows[0]).toEqual({ version: PG_MIGRATIONS.at(-1)!.version });
  });
});

describe("warm connections", () => {
  it("are opened at start and kept through a quiet spell; only the connections above them close when idle", async () => {
    // The pool's idle timer (10 s) on fake time; the connections themselves are real.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const pool = createPool({ url: TEST_PG_URL, poolSize: 6, warmConnections: 2 });
    try {
      await openWarmConnections(pool);
      expect(pool.totalCount).toBe(2);
      const burst = await Promise.all(Array.from({ length: 5 }, () => pool.connect()));
      expect(pool.totalCount).toBe(5);
      for (const client of burst) client.release();
      await vi.advanceTimersByTimeAsync(10_000);
      expect({ total: pool.totalCount, idle: pool.idleCount }).toEqual({ total: 2, idle: 2 });
      // A Stop after the quiet spell finds them open: no new connection.
      const { rows } = await pool.query("SELECT 1 AS one");
      expect(rows).toEqual([{ one: 1 }]);
      expect(pool.totalCount).toBe(2);
    } finally {
      vi.useRealTimers();
      await pool.end();
    }
  });
});

describe("round trips of a plan's writes", () => {
  let driver: PgDriver;
  let store: SqlStore;

  beforeEach(async () => {
    await (await createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 1 })).close();
    driver = new PgDriver(createPool({ url: TEST_PG_URL, schema, poolSize: 2 }));
    store = new SqlStore(driver);
  });

  afterEach(async () => {
    await store.close();
  });

  /** The round trips `work` costs (statements, BEGIN and COMMIT). */
  async function roundTrips(work: () => Promise<unknown>): Promise<number> {
    const before = driver.roundTrips;
    await work();
    return driver.roundTrips - before;
  }

  it("a publication that records no step costs what it did (7); recording its step costs one more", async () => {
    const runId = await runningRun(store, "thr_publish", T0);

    const plain = await roundTrips(() => store.publishMessage({ ...publishInput(runId, "model-1", T0 + 3), complete: false }));
    const recorded = await roundTrips(() => store.publishMessage({ ...publishInput(runId, "model-2", T0 + 4), complete: false, recordsStep: true }));

    expect(plain).toBe(7);
    expect(recorded).toBe(plain + 1);
  });

  it("completing a step costs the same whatever the number of steps before it", async () => {
    const runId = await runningRun(store, "thr_plan", T0);
    const complete = (stepId: string, now: number) =>
      roundTrips(async () => {
        const result = await store.completeStep({ tenantId: TENANT, runId, stepId, checkpointId: createId("cp"), result: "{}", now });
        expect(result.kind).toBe("completed");
      });

    const first = await complete("step-0", T0 + 3);
    const steps = Array.from({ length: 200 }, (_, index) => ({ stepId: `step-${index + 1}`, ordinal: index + 1, status: "not_started" as const }));
    await store.saveSteps({ tenantId: TENANT, runId, steps });
    const later = await complete("step-200", T0 + 4);
    const added = await complete("step-new", T0 + 5);

    expect(first).toBe(7);
    expect([later, added]).toEqual([first, first]);
    expect((await store.listRunSteps(TENANT, runId)).at(-1)).toMatchObject({ stepId: "step-new", ordinal: 201 });
  });

  it("writing a plan's rows holds the run's lock for one statement, not one per step (a Stop waits behind it)", async () => {
    const runId = await runningRun(store, "thr_rows", T0);
    const rows = (count: number, status: "not_started" | "cancelled") =>
      Array.from({ length: count }, (_, index) => ({ stepId: `s-${index}`, ordinal: index, status, title: `Step ${index}`, dependsOn: [], inputHash: null }));
    const one = await roundTrips(() => store.saveSteps({ tenantId: TENANT, runId, steps: rows(1, "not_started") }));
    const fifty = await roundTrips(() => store.saveSteps({ tenantId: TENANT, runId, steps: rows(50, "not_started") }));
    // BEGIN, the run's row, one upsert, COMMIT.
    expect(one).toBe(4);
    expect(fifty).toBe(one);
    await store.saveSteps({ tenantId: TENANT, runId, steps: rows(50, "cancelled") });
    const steps = await store.listRunSteps(TENANT, runId);
    expect(steps.map((step) => [step.stepId, step.ordinal, step.status])).toEqual(rows(50, "cancelled").map((row) => [row.stepId, row.ordinal, "cancelled"]));
  });
});
