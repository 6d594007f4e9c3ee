/**
 * `tidemark prune` through the CLI (real processes) on both stores: a dry run counts each layer's
 * expired rows and changes nothing; `--apply` prunes them (traces deleted, a finished run's steps
 * deleted, operations reduced); flags override the defaults; a missing store is refused untouched.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkStore } from "../src/check/index.js";
import { createId } from "../src/core/index.js";
import type { Store } from "../src/store/index.js";
import { createPostgresStore } from "../src/store/postgres/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";
import { dropTestSchema, newTestSchemaName, TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { adapters } from "./conformance/adapters.js";
import { runCli } from "./support/server-process.js";
import { claimedRunOnNewThread } from "./support/store-fixtures.js";

const TENANT = "local";
/** Long ago: older than every default retention. */
const T0 = 1_700_000_000_000;

/** One finished run with a step, two traces and a committed operation, all at T0; its thread and run ids. */
async function seed(store: Store): Promise<{ threadId: string; runId: string }> {
  const threadId = createId("thr");
  const run = await claimedRunOnNewThread(store, { tenantId: TENANT, threadId, now: T0 });
  await store.saveSteps({ tenantId: TENANT, runId: run.runId, steps: [{ stepId: "a", status: "completed", ordinal: 0 }] });
  for (const kind of ["one", "two"]) {
    await store.appendTrace({ tenantId: TENANT, traceId: createId("run"), runId: run.runId, threadId, kind, data: {}, at: T0 + 3 });
  }
  const prepared = await store.prepareOperation({
    tenantId: TENANT,
    opId: createId("op"),
    threadId,
    runId: run.runId,
    toolName: "send_quote",
    toolCallId: "call_1",
    idempotencyKey: "quote:1:send",
    input: "{}",
    preview: null,
    checkpointId: createId("cp"),
    now: T0 + 4,
  });
  if (prepared.kind !== "prepared") throw new Error(prepared.kind);
  await store.beginCommit({ tenantId: TENANT, opId: prepared.operation.opId, runId: run.runId, now: T0 + 5 });
  await store.finishOperation({ tenantId: TENANT, opId: prepared.operation.opId, phase: "committed", result: { ok: true }, now: T0 + 6 });
  await store.finishRun({ tenantId: TENANT, runId: run.runId, to: "completed", from: ["running"], stats: {}, now: T0 + 7 });
  return { threadId, runId: run.runId };
}

/** The counts a prune report prints, by layer (`-` for a layer kept for ever). */
function counts(stdout: string): Record<string, string> {
  return Object.fromEntries(
    stdout
      .split("\n")
      .map((line) => /^(traces|run_detail|fragments|operations)\s+(\S+)/.exec(line))
      .filter((match) => match !== null)
      .map((match) => [match[1], match[2]]),
  );
}

interface Target {
  name: string;
  /** The CLI's --db (and --schema) arguments. */
  args: string[];
  open(): Promise<Store>;
}

const targets: (() => Promise<Target & { dispose(): Promise<void> }>)[] = [];
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tidemark-cli-prune-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

targets.push(async () => {
  const file = join(dir, `prune-${createId("thr")}.db`);
  return { name: "sqlite", args: ["--db", file], open: async () => createSqliteStore({ path: file, checkpointIntervalMs: 0 }), dispose: async () => {} };
});
if (adapters.some((adapter) => adapter.name === "postgres")) {
  targets.push(async () => {
    const schema = newTestSchemaName("tm_prune");
    return {
      name: "postgres",
      args: ["--db", TEST_PG_URL, "--schema", schema],
      open: () => createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 2 }),
      dispose: () => dropTestSchema(schema),
    };
  });
}

describe("tidemark prune (real process)", () => {
  it.each(targets.map((make, index) => [index === 0 ? "sqlite" : "postgres", make] as const))(
    "%s: a dry run counts and changes nothing; --apply prunes each layer, and check stays clean",
    async (_name, make) => {
      const target = await make();
      try {
        let store = await target.open();
        const { threadId, runId } = await seed(store);
        await store.close();

        const dry = await runCli(["prune", ...target.args]);
        expect(dry).toMatchObject({ code: 0, stderr: "" });
        expect(counts(dry.stdout)).toEqual({ traces: "2", run_detail: "1", fragments: "-", operations: "1" });
        expect(dry.stdout).toContain("Dry run: nothing was changed.");
        store = await target.open();
        expect(await store.listTraces(TENANT, runId)).toHaveLength(2);
        expect(await store.listRunSteps(TENANT, runId)).toHaveLength(1);
        await store.close();

        // A flag keeps traces for ever; the other layers go.
        const applied = await runCli(["prune", ...target.args, "--apply", "--trace-ttl", "never", "--batch-size", "1"]);
        expect(applied).toMatchObject({ code: 0, stderr: "" });
        expect(counts(applied.stdout)).toEqual({ traces: "-", run_detail: "1", fragments: "-", operations: "1" });
        store = await target.open();
        try {
          expect(await store.listTraces(TENANT, runId)).toHaveLength(2);
          expect(await store.listRunSteps(TENANT, runId)).toEqual([]);
          expect((await store.getRun(TENANT, runId))!.status).toBe("completed");
          expect((await store.listOperations(TENANT, threadId))[0]).toMatchObject({ phase: "committed", resultKind: "object", result: null });
          expect((await checkStore(store)).violations).toEqual([]);
        } finally {
          await store.close();
        }
        expect(counts((await runCli(["prune", ...target.args])).stdout)).toEqual({ traces: "2", run_detail: "0", fragments: "-", operations: "0" });
      } finally {
        await target.dispose();
      }
    },
    60_000,
  );

  it("refuses a missing store (exit 2, nothing created) and a bad retention", async () => {
    const file = join(dir, "missing.db");
    expect(await runCli(["prune", "--db", file, "--apply"])).toMatchObject({ code: 2, stderr: `tidemark: No database at ${file}.\n` });
    expect(() => statSync(file)).toThrow();
    const bad = await runCli(["prune", "--db", file, "--trace-ttl", "soon"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--trace-ttl must be a duration such as 12h or 30d, or never.");
    const env = await runCli(["prune", "--db", file], { ...process.env, TIDEMARK_TRACE_TTL_MS: "-5" });
    expect(env).toMatchObject({ code: 2, stderr: "tidemark: TIDEMARK_TRACE_TTL_MS must be a number of milliseconds, or never.\n" });
  });
});
