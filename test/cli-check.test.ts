/**
 * `tidemark check` through the CLI (real processes) is read-only on both stores: a missing,
 * foreign, empty or outdated database, or a schema that does not exist, is an error with exit
 * code 2, and nothing is created or migrated, neither the mistyped schema nor tables in `public`.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createId } from "../src/core/index.js";
import { adapters } from "./conformance/adapters.js";
import { createSqliteStore, MIGRATIONS } from "../src/store/sqlite/index.js";
import { createTestPostgresStore, dropTestSchema, newTestSchemaName, TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { runCli } from "./support/server-process.js";

const isPostgresTested = adapters.some((adapter) => adapter.name === "postgres");

/** `tidemark check` with these arguments: the code, and stderr as one line. */
async function check(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const result = await runCli(["check", ...args]);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  return { ...result, stderr: result.stderr.trim() };
}

describe("tidemark --version and help", () => {
  it("prints package.json's version, and the help points to a document in the repository", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    const printed = await runCli(["--version"]);
    expect(printed).toMatchObject({ code: 0, stdout: `${version}\n` });
    const help = await runCli(["check", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("docs/invariants.md");
    expect(help.stdout).not.toContain("DESIGN");
    expect(help.stdout).toMatch(/^ {2}8\. A deleted thread has no run that may still execute or publish\.$/m);
    expect(readFileSync(new URL("../docs/invariants.md", import.meta.url), "utf8")).toMatch(/^## 8\. /m);
  });
});

describe("tidemark check on SQLite files (real process)", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-cli-check-"));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const tablesOf = (file: string): string[] => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare("SELECT name FROM sqlite_master ORDER BY name").all() as { name: string }[]).map((row) => row.name);
    } finally {
      db.close();
    }
  };

  it("a missing file: exit 2, and no file is created", async () => {
    const file = join(dir, "missing.db");
    expect(await check("--db", file)).toMatchObject({ code: 2, stderr: `tidemark: No database at ${file}.` });
    expect(() => statSync(file)).toThrow();
  });

  it("a file that is not SQLite, and an empty file: exit 2, both untouched", async () => {
    const text = join(dir, "notes.txt");
    writeFileSync(text, "These are my notes, not a database. ".repeat(40));
    expect(await check("--db", text)).toMatchObject({ code: 2, stderr: `tidemark: ${text} is not a SQLite database.` });
    expect(readFileSync(text, "utf8")).toBe("These are my notes, not a database. ".repeat(40));
    const empty = join(dir, "empty.db");
    writeFileSync(empty, "");
    expect(await check("--db", empty)).toMatchObject({ code: 2, stderr: `tidemark: ${empty} is not a Tidemark database (it has no Tidemark tables).` });
    expect(statSync(empty).size).toBe(0);
  });

  it("another program's SQLite database: exit 2, and no Tidemark table is created in it", async () => {
    const file = join(dir, "other.db");
    const db = new Database(file);
    db.exec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me')");
    db.close();
    expect(await check("--db", file)).toMatchObject({ code: 2, stderr: `tidemark: ${file} is not a Tidemark database (it has no Tidemark tables).` });
    expect(tablesOf(file)).toEqual(["notes"]);
  });

  it("a Tidemark file at an older schema version: exit 2, and it is not migrated", async () => {
    const file = join(dir, "old.db");
    await createSqliteStore({ path: file, checkpointIntervalMs: 0 }).close();
    const latest = MIGRATIONS.at(-1)!.version;
    const db = new Database(file);
    db.prepare("DELETE FROM schema_migrations WHERE version = ?").run(latest);
    db.close();
    expect(await check("--db", file)).toMatchObject({
      code: 2,
      stderr:
        `tidemark: ${file} is at schema version ${latest - 1}, and this Tidemark reads version ${latest}: ` +
        "start `tidemark serve` on it once to migrate it (check never migrates).",
    });
    const after = new Database(file, { readonly: true });
    expect(after.prepare("SELECT MAX(version) AS version FROM schema_migrations").get()).toEqual({ version: latest - 1 });
    after.close();
  });

  it("reports invariant 8 and stale runs, with --stale-after", async () => {
    const file = join(dir, "runs.db");
    const store = createSqliteStore({ path: file, checkpointIntervalMs: 0 });
    const long = Date.now() - 3 * 3_600_000;
    const threadId = createId("thr");
    await store.createThread({ tenantId: "local", threadId, checkpointId: createId("cp"), metadata: {}, now: long });
    const created = await store.createRun({
      tenantId: "local",
      runId: createId("run"),
      threadId,
      input: { role: "user", content: "queued three hours ago" },
      inputMessageId: createId("msg"),
      checkpointId: createId("cp"),
      idempotencyKey: null,
      requestHash: "h",
      model: "demo",
      onDisconnect: "continue",
      recoveryPolicy: "fail",
      expectedStateVersion: null,
      now: long,
    });
    if (created.kind !== "created") throw new Error(created.kind);
    await store.close();

    const stale = await check("--db", file);
    expect(stale.code).toBe(0);
    expect(stale.stdout).toMatch(new RegExp(`^stale run ${threadId}: run ${created.run.runId} is queued: queued 3 h ago .* and no worker has taken it$`, "m"));
    expect(stale.stdout).toMatch(/^0 violations in 1 thread \(1 run, 1 message\); 1 stale run \(a warning, not a violation\)$/m);
    expect((await check("--db", file, "--stale-after", "4h")).stdout).toBe("0 violations in 1 thread (1 run, 1 message)\n");

    const db = new Database(file);
    db.prepare("UPDATE threads SET status = 'deleted' WHERE thread_id = ?").run(threadId);
    db.close();
    const deleted = await check("--db", file, "--stale-after", "4h");
    expect(deleted.code).toBe(1);
    expect(deleted.stdout).toContain(`invariant 8 ${threadId}: run ${created.run.runId} is queued on a deleted thread`);
  });
});

describe.runIf(isPostgresTested)("tidemark check on PostgreSQL (real process)", () => {
  const admin = async <T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  const schemaExists = (schema: string) =>
    admin(TEST_PG_URL, async (client) => (await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rowCount === 1);

  it("a mistyped --schema: exit 2, and the schema is not created", async () => {
    const schema = newTestSchemaName("tm_typo");
    expect(await check("--db", TEST_PG_URL, "--schema", schema)).toMatchObject({
      code: 2,
      stderr: `tidemark: Cannot check ${TEST_PG_URL}: There is no schema "${schema}" in this database.`,
    });
    expect(await schemaExists(schema)).toBe(false);
  });

  it("a schema without Tidemark's tables: exit 2, and nothing is created in it", async () => {
    const schema = newTestSchemaName("tm_empty");
    await admin(TEST_PG_URL, (client) => client.query(`CREATE SCHEMA ${schema}`));
    try {
      expect(await check("--db", TEST_PG_URL, "--schema", schema)).toMatchObject({
        code: 2,
        stderr: `tidemark: Cannot check ${TEST_PG_URL}: Schema "${schema}" holds no Tidemark tables.`,
      });
      const tables = await admin(TEST_PG_URL, async (client) => (await client.query("SELECT 1 FROM pg_tables WHERE schemaname = $1", [schema])).rowCount);
      expect(tables).toBe(0);
    } finally {
      await dropTestSchema(schema);
    }
  });

  it("without --schema on a database without Tidemark: exit 2, and public gets no table", async () => {
    const database = newTestSchemaName("tm_check_db");
    await admin(TEST_PG_URL, (client) => client.query(`CREATE DATABASE ${database}`));
    const url = new URL(TEST_PG_URL);
    url.pathname = `/${database}`;
    try {
      expect(await check("--db", url.toString())).toMatchObject({
        code: 2,
        stderr: `tidemark: Cannot check ${url.toString()}: Schema "public" holds no Tidemark tables.`,
      });
      const tables = await admin(url.toString(), async (client) => (await client.query("SELECT 1 FROM pg_tables WHERE schemaname = 'public'")).rowCount);
      expect(tables).toBe(0);
    } finally {
      await admin(TEST_PG_URL, (client) => client.query(`DROP DATABASE ${database}`));
    }
  });

  it("a Tidemark schema: checked, exit 0; a password in the address is never printed", async () => {
    const store = await createTestPostgresStore();
    try {
      await store.createThread({ tenantId: "local", threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now: Date.now() });
      expect(await check("--db", TEST_PG_URL, "--schema", store.schema)).toMatchObject({ code: 0, stdout: "0 violations in 1 thread (0 runs, 0 messages)\n" });
    } finally {
      await store.close();
    }
    const url = new URL(TEST_PG_URL);
    url.password = "hunter2-Qx7v";
    url.port = "1";
    const refused = await check("--db", url.toString());
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^tidemark: Cannot check postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/test: /);
    expect(refused.stderr).not.toContain("hunter2");
  });
});
