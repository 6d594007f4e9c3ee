/**
 * What only the SQLite adapter has: its file and its migrations. The contract itself is tested on
 * every adapter by the conformance suite (test/conformance/).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createId } from "../../core/index.js";
import { checkStore } from "../../check/index.js";
import { SqlStore } from "../sql/sql-store.js";
import type { Store } from "../store.js";
import { MIGRATIONS, migrate } from "./migrations.js";
import { SqliteDriver } from "./sqlite-driver.js";
import { createSqliteStore } from "./sqlite-store.js";
import { claimedRunOnNewThread } from "../../../test/support/store-fixtures.js";

const TENANT = "tenant_a";
const T0 = 1_700_000_000_000;

let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tidemark-sqlite-"));
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Undoes migrations 13 (structured messages) and 14 (retention per layer). */
const UNDO_MIGRATIONS_13_14 = `
  ALTER TABLE messages DROP COLUMN format;
  DROP INDEX traces_by_time; DROP INDEX operations_reducible; DROP INDEX runs_detail_expirable; DROP INDEX messages_fragments_by_time;
  ALTER TABLE operations DROP COLUMN reduced_at; ALTER TABLE operations DROP COLUMN result_kind; ALTER TABLE runs DROP COLUMN detail_pruned_at;
`;

describe("migrations", () => {
  it("reopening a file keeps its data and applies each migration once", async () => {
    const file = path.join(dir, "tidemark.db");
    const first = createSqliteStore({ path: file });
    const thread = await first.createThread({ tenantId: TENANT, threadId: "thr_keep", checkpointId: createId("cp"), metadata: {}, now: T0 });
    await first.close();

    const second = createSqliteStore({ path: file });
    expect(await second.getThread(TENANT, "thr_keep")).toEqual(thread);
    await second.close();

    const db = new Database(file);
    try {
      expect(migrate(db)).toBe(MIGRATIONS.length);
      expect(db.prepare("SELECT version, name FROM schema_migrations ORDER BY version").all()).toEqual(
        MIGRATIONS.map(({ version, name }) => ({ version, name })),
      );
    } finally {
      db.close();
    }
  });
});

/** One completed turn on a new thread of `store`: the thread, its run and its two messages. */
async function completedTurn(store: Store, threadId: string, now: number): Promise<{ runId: string }> {
  const run = await claimedRunOnNewThread(store, { tenantId: TENANT, threadId, now });
  const published = await store.publishMessage({
    tenantId: TENANT,
    runId: run.runId,
    messageId: createId("msg"),
    checkpointId: createId("cp"),
    role: "assistant",
    content: "hi",
    completedStepId: "step-1",
    stats: {},
    complete: true,
    now: now + 3,
  });
  if (published.kind !== "published") throw new Error("not published");
  return { runId: run.runId };
}

describe("migration 8 (agents and plan steps)", () => {
  it("upgrades a version-7 file in place: its runs are `chat` without config, its messages unlabelled", async () => {
    const file = path.join(dir, "v7.db");
    const writer = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    const { runId } = await completedTurn(writer, "thr_old", T0);
    await writer.close();
    // The file as version 7 left it: without migration 8's columns, table and record.
    const db = new Database(file);
    db.exec(`
      DROP TABLE run_steps;
      ALTER TABLE runs DROP COLUMN agent;
      ALTER TABLE runs DROP COLUMN config;
      ALTER TABLE messages DROP COLUMN label;
      ALTER TABLE messages DROP COLUMN interrupted;
      DROP INDEX runs_unfinished_by_tenant;
      ALTER TABLE runs DROP COLUMN instructions;
      ALTER TABLE runs DROP COLUMN metadata;
      ${UNDO_MIGRATIONS_13_14}
      DELETE FROM schema_migrations WHERE version >= 8;
    `);
    db.close();

    const store = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    try {
      expect(await store.getRun(TENANT, runId)).toMatchObject({ status: "completed", agent: "chat", config: null, instructions: null, metadata: {} });
      expect((await store.listMessages(TENANT, "thr_old")).map((message) => message.label)).toEqual([null, null]);
      expect(await store.listRunSteps(TENANT, runId)).toEqual([]);
      // New work on the upgraded file: a run of another agent with a plan.
      const next = await completedTurn(store, "thr_new", T0 + 10_000);
      await store.saveSteps({ tenantId: TENANT, runId: next.runId, steps: [{ stepId: "a", status: "cancelled" }] });
      expect((await store.listRunSteps(TENANT, next.runId)).map((step) => step.status)).toEqual(["cancelled"]);
      expect((await checkStore(store)).violations).toEqual([]);
    } finally {
      await store.close();
    }
    const reader = new Database(file, { readonly: true });
    try {
      expect(reader.prepare("SELECT MAX(version) AS version FROM schema_migrations").get()).toEqual({ version: MIGRATIONS.at(-1)!.version });
    } finally {
      reader.close();
    }
  });
});

describe("migration 9 (live turns)", () => {
  it("upgrades a version-8 file in place: its messages are not interrupted, and a heard answer can be published", async () => {
    const file = path.join(dir, "v8.db");
    const writer = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    await completedTurn(writer, "thr_old", T0);
    await writer.close();
    const db = new Database(file);
    // The file as version 8 left it: without what migrations 9 to 11 added, and their records.
    db.exec(`
      ALTER TABLE messages DROP COLUMN interrupted;
      DROP INDEX runs_unfinished_by_tenant;
      ALTER TABLE runs DROP COLUMN instructions;
      ALTER TABLE runs DROP COLUMN metadata;
      ${UNDO_MIGRATIONS_13_14}
      DELETE FROM schema_migrations WHERE version >= 9;
    `);
    db.close();

    const store = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    try {
      expect((await store.listMessages(TENANT, "thr_old")).map((message) => message.interrupted)).toEqual([false, false]);
      const run = await claimedRunOnNewThread(store, { tenantId: TENANT, threadId: "thr_live", now: T0 + 10_000 });
      const accepted = await store.requestCancel({
        tenantId: TENANT,
        runId: run.runId,
        reason: "user_speech",
        checkpointId: "cp_heard",
        pendingStep: null,
        now: T0 + 10_001,
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

describe("migration 11 (run instructions and metadata)", () => {
  it("upgrades a version-10 file in place: its runs have no instructions and empty metadata; new runs keep theirs", async () => {
    const file = path.join(dir, "v10.db");
    const writer = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    const { runId } = await completedTurn(writer, "thr_old", T0);
    await writer.close();
    const db = new Database(file);
    db.exec(`${UNDO_MIGRATIONS_13_14} ALTER TABLE runs DROP COLUMN instructions; ALTER TABLE runs DROP COLUMN metadata; DELETE FROM schema_migrations WHERE version >= 11;`);
    db.close();

    const store = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    try {
      expect(await store.getRun(TENANT, runId)).toMatchObject({ status: "completed", instructions: null, metadata: {} });
      await store.createThread({ tenantId: TENANT, threadId: "thr_new", checkpointId: "cp_new_root", metadata: {}, now: T0 + 10_000 });
      const created = await store.createRun({
        tenantId: TENANT,
        runId: "run_new",
        threadId: "thr_new",
        input: { role: "user", content: "hello" },
        inputMessageId: "msg_new_input",
        checkpointId: "cp_new_input",
        idempotencyKey: null,
        requestHash: "hash",
        model: "demo",
        instructions: "Answer in French.",
        metadata: { ticket: "42" },
        onDisconnect: "continue",
        recoveryPolicy: "fail",
        expectedStateVersion: null,
        now: T0 + 10_001,
      });
      expect(created).toMatchObject({ kind: "created", run: { instructions: "Answer in French.", metadata: { ticket: "42" } } });
      expect((await checkStore(store)).violations).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe("a plan's statements", () => {
  it("search by key: none reads a table whole or sorts it, so a step costs the same at the 1,000th as at the 10th", async () => {
    const db = new Database(":memory:");
    migrate(db);
    const texts = new Set<string>();
    const prepare = db.prepare.bind(db);
    db.prepare = ((source: string) => {
      texts.add(source);
      return prepare(source);
    }) as typeof db.prepare;
    const store = new SqlStore(new SqliteDriver(db));
    try {
      await completedTurn(store, "thr_done", T0);
      await store.createThread({ tenantId: TENANT, threadId: "thr_plan", checkpointId: createId("cp"), metadata: {}, now: T0 });
      const created = await store.createRun({
        tenantId: TENANT,
        runId: "run_plan",
        threadId: "thr_plan",
        input: { role: "user", content: "plan" },
        inputMessageId: createId("msg"),
        checkpointId: createId("cp"),
        idempotencyKey: null,
        requestHash: "h",
        model: "demo",
        agent: "planner",
        onDisconnect: "continue",
        recoveryPolicy: "fail",
        expectedStateVersion: null,
        now: T0 + 1,
      });
      expect(created.kind).toBe("created");
      await store.claimRun({ tenantId: TENANT, runId: "run_plan", owner: "w", leaseExpiresAt: T0 + 60_000, now: T0 + 2 });
      await store.saveSteps({ tenantId: TENANT, runId: "run_plan", steps: [{ stepId: "a", status: "in_progress" }, { stepId: "b", ordinal: 1, status: "not_started" }] });
      expect((await store.completeStep({ tenantId: TENANT, runId: "run_plan", stepId: "a", checkpointId: createId("cp"), result: "{}", now: T0 + 3 })).kind).toBe("completed");
      const publish = { tenantId: TENANT, runId: "run_plan", role: "assistant" as const, content: "b", completedStepId: "b", recordsStep: true, stats: {} };
      await store.publishMessage({ ...publish, messageId: createId("msg"), checkpointId: createId("cp"), complete: false, now: T0 + 4 });
      await store.publishMessage({ ...publish, messageId: createId("msg"), checkpointId: createId("cp"), complete: true, now: T0 + 5 });
      await store.listRunSteps(TENANT, "run_plan");
    } finally {
      await store.close();
    }
    const plan = new Database(":memory:");
    migrate(plan);
    try {
      const stepTexts = [...texts].filter((text) => text.includes("run_steps"));
      expect(stepTexts.length).toBeGreaterThanOrEqual(5);
      for (const text of texts) {
        if (/^(BEGIN|COMMIT|ROLLBACK)/.test(text)) continue;
        const placeholders = (text.match(/\?/g) ?? []).length;
        const details = (plan.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...Array<null>(placeholders).fill(null)) as { detail: string }[]).map((row) => row.detail);
        expect({ text, details: details.filter((detail) => /^SCAN |TEMP B-TREE/.test(detail)) }).toEqual({ text, details: [] });
      }
    } finally {
      plan.close();
    }
  });
});

// The conformance suite checks this through a second connection, which an in-memory store lacks.
describe("forkThread on a file", () => {
  let file: string;
  let store: Store;
  let now: number;
  const tick = (): number => (now += 1_000);

  beforeEach(() => {
    file = path.join(dir, "store.db");
    store = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    now = T0;
  });

  afterEach(async () => {
    await store.close();
  });

  /** Rows in every table of the file, counted by a second connection. */
  function rowCount(): number {
    const db = new Database(file, { readonly: true });
    try {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
      return tables.reduce((sum, { name }) => sum + (db.prepare(`SELECT COUNT(*) AS n FROM "${name}"`).get() as { n: number }).n, 0);
    } finally {
      db.close();
    }
  }

  /** One completed turn on `threadId`: the user's input and the assistant's answer. */
  async function turn(threadId: string, text: string): Promise<void> {
    const created = await store.createRun({
      tenantId: TENANT,
      runId: createId("run"),
      threadId,
      input: { role: "user", content: text },
      inputMessageId: createId("msg"),
      checkpointId: createId("cp"),
      idempotencyKey: null,
      requestHash: `hash-${text}`,
      model: "demo",
      onDisconnect: "continue",
      recoveryPolicy: "fail",
      expectedStateVersion: null,
      now: tick(),
    });
    if (created.kind !== "created") throw new Error(`run not created: ${created.kind}`);
    await store.claimRun({ tenantId: TENANT, runId: created.run.runId, owner: "w", leaseExpiresAt: now + 60_000, now: tick() });
    const published = await store.publishMessage({
      tenantId: TENANT,
      runId: created.run.runId,
      messageId: createId("msg"),
      checkpointId: createId("cp"),
      role: "assistant",
      content: `re: ${text}`,
      completedStepId: "step-1",
      stats: { llmCallCount: 1 },
      complete: true,
      now: tick(),
    });
    if (published.kind !== "published") throw new Error("not published");
  }

  it("writes two rows whatever the prefix's length", async () => {
    const written: number[] = [];
    for (const turns of [1, 40]) {
      const source = await store.createThread({ tenantId: TENANT, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: tick() });
      for (let index = 0; index < turns; index++) await turn(source.threadId, `q${index}`);
      const head = (await store.getThread(TENANT, source.threadId))!.headCheckpointId;
      const before = rowCount();
      const result = await store.forkThread({
        tenantId: TENANT,
        sourceThreadId: source.threadId,
        fromCheckpointId: head,
        threadId: createId("thr"),
        checkpointId: createId("cp"),
        metadata: {},
        now: tick(),
      });
      expect(result.kind).toBe("forked");
      written.push(rowCount() - before);
    }
    expect(written).toEqual([2, 2]);
  });
});
