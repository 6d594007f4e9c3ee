/**
 * `tidemark erase --tenant` through the CLI (real processes) on both stores: a dry run counts and
 * changes nothing; `--apply` erases every thread of the tenant (a branch before its parent), leaves
 * a thread whose run is still going (exit 1, named), and touches no other tenant; `tidemark check`
 * stays clean.
 */
import { mkdtempSync, rmSync } from "node:fs";
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
import { runningRunOn } from "./support/store-fixtures.js";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tidemark-cli-erase-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

const targets = [
  {
    name: "sqlite",
    make: () => {
      const file = join(dir, `erase-${createId("thr")}.db`);
      return { args: ["--db", file], open: async (): Promise<Store> => createSqliteStore({ path: file, checkpointIntervalMs: 0 }), dispose: async () => {} };
    },
  },
  ...(adapters.some((adapter) => adapter.name === "postgres")
    ? [
        {
          name: "postgres",
          make: () => {
            const schema = newTestSchemaName("tm_erase");
            return {
              args: ["--db", TEST_PG_URL, "--schema", schema],
              open: (): Promise<Store> => createPostgresStore({ url: TEST_PG_URL, schema, poolSize: 2 }),
              dispose: () => dropTestSchema(schema),
            };
          },
        },
      ]
    : []),
];

describe("tidemark erase --tenant (real process)", () => {
  it.each(targets)("$name: erases the tenant's threads, leaves one whose run is going, and no other tenant's", async ({ make }) => {
    const target = make();
    try {
      let store = await target.open();
      const now = Date.now();
      const parent = await store.createThread({ tenantId: "acme", threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now });
      await store.forkThread({ tenantId: "acme", sourceThreadId: parent.threadId, fromCheckpointId: parent.headCheckpointId, threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now });
      const busy = await store.createThread({ tenantId: "acme", threadId: createId("thr"), checkpointId: createId("cp"), metadata: {}, now });
      const running = await runningRunOn(store, busy.threadId, "still going", "acme");
      const other = await store.createThread({ tenantId: "globex", threadId: createId("thr"), checkpointId: createId("cp"), metadata: { keep: true }, now });
      await store.close();

      const dry = await runCli(["erase", ...target.args, "--tenant", "acme"]);
      expect(dry).toMatchObject({ code: 0, stderr: "", stdout: "3 thread(s) of tenant acme to erase.\nDry run: nothing was changed. Run again with --apply to erase.\n" });

      const applied = await runCli(["erase", ...target.args, "--tenant", "acme", "--apply"]);
      expect(applied).toMatchObject({ code: 1, stderr: "" });
      expect(applied.stdout).toBe(`Erased 2 thread(s) of tenant acme.\nleft: ${busy.threadId} (run ${running.runId} has not ended)\n`);
      store = await target.open();
      try {
        expect(await store.getThread("acme", parent.threadId)).toBeUndefined();
        expect(await store.getThread("acme", busy.threadId)).toMatchObject({ status: "active" });
        expect(await store.getThread("globex", other.threadId)).toMatchObject({ metadata: { keep: true } });
        await store.finishRun({ tenantId: "acme", runId: running.runId, to: "failed", from: ["running"], stats: {}, failureReason: "error", now: Date.now() });
        expect((await checkStore(store)).violations).toEqual([]);
      } finally {
        await store.close();
      }
      expect(await runCli(["erase", ...target.args, "--tenant", "acme", "--apply"])).toMatchObject({ code: 0, stdout: "Erased 1 thread(s) of tenant acme.\n" });
      store = await target.open();
      try {
        expect(await store.listErasableThreads("acme")).toEqual([]);
        expect(await store.listErasableThreads("globex")).toEqual([other.threadId]);
        expect((await checkStore(store)).violations).toEqual([]);
      } finally {
        await store.close();
      }
    } finally {
      await target.dispose();
    }
  }, 60_000);
});
