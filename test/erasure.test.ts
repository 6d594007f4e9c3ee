/**
 * Erasure over HTTP on both stores (docs/data/lifetimes.md): `DELETE /v1/threads/{id}?erase=true`
 * leaves no row holding the thread's text (a marker in its metadata, title, user message, tool
 * input and result, a fragment and a trace, looked for in every column of every table), keeps what
 * the invariants need (`tidemark check` stays clean, a retried send still runs nothing), answers
 * the same twice, and touches no other thread or tenant; a run still going, a branch, a foreign
 * or unknown id are refused.
 */
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createId } from "../src/core/index.js";
import { TEST_PG_URL } from "../src/testing/postgres-test-database.js";
import { countingEmailTool } from "./support/counting-email-tool.js";
import { startHarness, type Harness, type HarnessStore } from "./support/harness.js";
import { runningRunOn } from "./support/store-fixtures.js";

const MARKER = "zq-erase-marker-5519";
const KEPT = "zq-kept-marker-8842";
const BRANCHED = "zq-branch-marker-3307";

/** How many values of every column of every table hold `text`. */
async function countEverywhere(h: Harness, text: string): Promise<number> {
  if (h.schema === undefined) {
    const db = new Database(h.dbPath, { readonly: true });
    try {
      let hits = 0;
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
      for (const { name } of tables) {
        for (const { name: column } of db.prepare(`PRAGMA table_info("${name}")`).all() as { name: string }[]) {
          hits += (db.prepare(`SELECT COUNT(*) AS n FROM "${name}" WHERE CAST("${column}" AS TEXT) LIKE ?`).get(`%${text}%`) as { n: number }).n;
        }
      }
      return hits;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: TEST_PG_URL });
  await client.connect();
  try {
    const { rows: columns } = await client.query<{ table_name: string; column_name: string }>(
      "SELECT c.table_name, c.column_name FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name) WHERE c.table_schema = $1 AND t.table_type = 'BASE TABLE'",
      [h.schema],
    );
    let hits = 0;
    for (const { table_name: table, column_name: column } of columns) {
      const { rows } = await client.query<{ n: string }>(`SELECT COUNT(*) AS n FROM "${h.schema}"."${table}" WHERE "${column}"::text LIKE $1`, [`%${text}%`]);
      hits += Number(rows[0]!.n);
    }
    return hits;
  } finally {
    await client.end();
  }
}

describe.each<HarnessStore>(["sqlite", "postgres"])("erasing a thread (%s)", (storeKind) => {
  let h: Harness;
  // Counts real sends: a retried or erased action must not send again.
  const email = countingEmailTool();

  beforeAll(async () => {
    h = await startHarness({ storeKind, demo: { wordsPerSecond: 0, wordCount: 10 }, tools: [email.tool] });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  /** A thread of tenant `local` with a completed turn (a tool call with its result) about `marker`, and the run's id. */
  async function turnAbout(marker: string): Promise<{ threadId: string; runId: string }> {
    const created = await h.api("/v1/threads", { method: "POST", json: { metadata: { note: marker } } });
    const threadId = created.body.thread_id as string;
    expect((await h.api(`/v1/threads/${threadId}`, { method: "PATCH", json: { title: `about ${marker}` } })).status).toBe(200);
    const run = await h.startRun(threadId, `Please email ada@example.com that ${marker} is ready`);
    expect((await h.events(run.run_id)).at(-1)!.type).toBe("run.completed");
    return { threadId, runId: run.run_id as string };
  }

  it("leaves no row holding the thread's text, keeps what the invariants need, and answers the same twice", async () => {
    const { threadId, runId } = await turnAbout(MARKER);
    const store = h.tidemark.store;
    const fragment = await store.saveFragment({ tenantId: "local", runId, messageId: createId("msg"), checkpointId: createId("cp"), content: `seen ${MARKER}`, now: Date.now() });
    expect(fragment.kind).toBe("saved");
    await store.appendTrace({ tenantId: "local", traceId: createId("run"), runId, threadId, kind: "note", data: { about: MARKER }, at: Date.now() });
    const kept = await turnAbout(KEPT);
    const foreign = await store.createThread({ tenantId: "tenant_x", threadId: createId("thr"), checkpointId: createId("cp"), metadata: { note: MARKER }, now: Date.now() });
    expect(email.sends()).toBe(2);
    expect(await countEverywhere(h, MARKER)).toBeGreaterThan(5);

    // Another tenant's thread is not this tenant's to erase.
    expect((await h.api(`/v1/threads/${foreign.threadId}?erase=true`, { method: "DELETE" })).body.error).toBe("thread_not_found");
    expect((await h.api(`/v1/threads/${createId("thr")}?erase=true`, { method: "DELETE" })).status).toBe(404);

    const erased = await h.api(`/v1/threads/${threadId}?erase=true`, { method: "DELETE" });
    expect(erased.status).toBe(200);
    expect(erased.body).toMatchObject({ thread_id: threadId, status: "erased", state_version: expect.any(Number) });
    expect(await h.api(`/v1/threads/${threadId}?erase=true`, { method: "DELETE" })).toMatchObject({ status: 200, body: erased.body });
    for (const path of ["", "/history", "/operations", "/checkpoints"]) expect((await h.api(`/v1/threads/${threadId}${path}`)).status).toBe(404);
    expect((await h.api(`/v1/threads/${threadId}`, { method: "DELETE" })).status).toBe(404);

    // Only the foreign tenant's own row still holds the marker; the kept thread is whole.
    expect(await countEverywhere(h, MARKER)).toBe(1);
    expect((await store.getThread("tenant_x", foreign.threadId))!.metadata).toEqual({ note: MARKER });
    expect(await countEverywhere(h, KEPT)).toBeGreaterThan(5);
    const keptHistory = (await h.api(`/v1/threads/${kept.threadId}/history`)).body.messages;
    expect(keptHistory.map((message: { role: string }) => message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect((await h.api(`/v1/threads/${kept.threadId}/operations`)).body.operations[0]).toMatchObject({ reduced_at: null, phase: "committed" });
    await h.expectNoViolations();

    // The erased thread's send, asked for again: the ledger still knows it was done.
    const again = await h.createThread();
    const retry = await h.startRun(again, `Please email ada@example.com that ${MARKER} is ready`);
    expect((await h.events(retry.run_id)).find((event) => event.type === "tool.result")).toMatchObject({ reused: true });
    expect(email.sends()).toBe(2);
  });

  it("refuses an erase flag it does not know with a 400, answers an ill-formed id as an unknown one, and changes nothing", async () => {
    const threadId = await h.createThread();
    const before = (await h.api(`/v1/threads/${threadId}`)).body;
    for (const flag of ["maybe", "1", "TRUE", "true%00"]) {
      const answer = await h.api(`/v1/threads/${threadId}?erase=${flag}`, { method: "DELETE" });
      expect(answer.status).toBe(400);
      expect(answer.body.error).toBe("invalid_request");
    }
    const illFormed = await h.api(`/v1/threads/${threadId}%00?erase=true`, { method: "DELETE" });
    expect(illFormed).toMatchObject({ status: 404, body: { error: "thread_not_found" } });
    expect((await h.api(`/v1/threads/${threadId}`)).body).toEqual(before);
  });

  it("two tabs erasing at once: one erases, both answer the same, the version moved once", async () => {
    const threadId = await h.createThread();
    const before = (await h.api(`/v1/threads/${threadId}`)).body.state_version as number;
    const [first, second] = await Promise.all([1, 2].map(() => h.api(`/v1/threads/${threadId}?erase=true`, { method: "DELETE" })));
    expect(first).toMatchObject({ status: 200, body: { status: "erased", state_version: before + 1 } });
    expect(second).toMatchObject({ status: 200, body: first!.body });
    await h.expectNoViolations();
  });

  it("refuses while a run of the thread is going, and a parent whose branch reads through it; both erasable after", async () => {
    const store = h.tidemark.store;
    const threadId = await h.createThread();
    const running = await runningRunOn(store, threadId, `a question about ${BRANCHED}`);
    const refused = await h.api(`/v1/threads/${threadId}?erase=true`, { method: "DELETE" });
    expect(refused).toMatchObject({ status: 409, body: { error: "run_in_progress", active_run_ids: [running.runId] } });
    await store.finishRun({ tenantId: "local", runId: running.runId, to: "failed", from: ["running"], stats: {}, failureReason: "error", now: Date.now() });

    const head = (await h.api(`/v1/threads/${threadId}`)).body.head_checkpoint_id ?? (await h.api(`/v1/threads/${threadId}/checkpoints`)).body.checkpoints.at(-1).checkpoint_id;
    const fork = await h.api(`/v1/threads/${threadId}/fork`, { method: "POST", json: { from_checkpoint_id: head } });
    expect(fork.status).toBe(201);
    const branchId = fork.body.thread_id as string;
    expect(await h.api(`/v1/threads/${threadId}?erase=true`, { method: "DELETE" })).toMatchObject({ status: 409, body: { error: "thread_has_branches", branch_ids: [branchId] } });
    expect((await h.api(`/v1/threads/${branchId}?erase=true`, { method: "DELETE" })).status).toBe(200);
    expect(await countEverywhere(h, BRANCHED)).toBeGreaterThan(0);
    expect((await h.api(`/v1/threads/${threadId}?erase=true`, { method: "DELETE" })).status).toBe(200);
    expect(await countEverywhere(h, BRANCHED)).toBe(0);
    await h.expectNoViolations();
  });
});
