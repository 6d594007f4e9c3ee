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
import type { Store } from "../store.js";
import { MIGRATIONS, migrate } from "./migrations.js";
import { createSqliteStore } from "./sqlite-store.js";

const TENANT = "tenant_a";
const T0 = 1_700_000_000_000;

let dir: string;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "tidemark-sqlite-"));
});

afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

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
