import Database from "better-sqlite3";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { readSseEvents } from "../src/stream/index.js";
import { waitForRun } from "./support/cluster.js";
import { freePort, runCli, startServerProcess, type ServerProcess } from "./support/server-process.js";

const SLOW_DEMO = { TIDEMARK_DEMO_WORDS_PER_SECOND: "60", TIDEMARK_DEMO_WORDS: "400", TIDEMARK_LEASE_MS: "400" };

async function call(base: string, path: string, init: { method?: string; json?: unknown } = {}) {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: init.json === undefined ? {} : { "content-type": "application/json" },
    body: init.json === undefined ? undefined : JSON.stringify(init.json),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** Reads a run's events until `until` holds; returns what was read. */
async function readUntil(base: string, runId: string, until: (event: RunEvent) => boolean, lastEventId?: number) {
  const controller = new AbortController();
  const response = await fetch(`${base}/v1/runs/${runId}/events`, {
    headers: lastEventId === undefined ? {} : { "last-event-id": String(lastEventId) },
    signal: controller.signal,
  });
  const events: RunEvent[] = [];
  try {
    for await (const message of readSseEvents(response.body!, { signal: controller.signal })) {
      const event = JSON.parse(message.data) as RunEvent;
      events.push(event);
      if (until(event)) break;
    }
  } finally {
    controller.abort();
  }
  return events;
}

describe("restart recovery (real processes)", () => {
  let dir: string;
  let dbPath: string;
  let server: ServerProcess | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-restart-"));
    dbPath = join(dir, "tidemark.db");
  });
  afterAll(async () => {
    server?.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("SIGKILL mid-generation: runs fail with worker_lost or resume by policy; SIGTERM hands runs back", async () => {
    const port = await freePort();
    server = await startServerProcess({ dbPath, port, env: SLOW_DEMO });
    const base = server.url;
    const failThread = (await call(base, "/v1/threads", { method: "POST", json: {} })).body.thread_id;
    const resumeThread = (await call(base, "/v1/threads", { method: "POST", json: {} })).body.thread_id;
    const failRun = (await call(base, `/v1/threads/${failThread}/runs`, { method: "POST", json: { input: { role: "user", content: "fail me" } } })).body;
    const resumeRun = (
      await call(base, `/v1/threads/${resumeThread}/runs`, {
        method: "POST",
        json: { input: { role: "user", content: "resume me" }, recovery_policy: "resume" },
      })
    ).body;
    const seenBeforeCrash = await readUntil(base, failRun.run_id, (event) => event.seq >= 5);
    await readUntil(base, resumeRun.run_id, (event) => event.seq >= 5);

    server.child.kill("SIGKILL");
    await server.exited;
    server = await startServerProcess({ dbPath, port, env: SLOW_DEMO });

    // Recovery follows the lease's expiry in the new process: its run's status is what the test can see.
    const failed = await waitForRun(base, failRun.run_id, (run) => run.status === "failed");
    expect(failed).toMatchObject({ failure_reason: "worker_lost", published_message_id: null });
    // The stream the client was following died with its process: it is told to read history.
    const gone = await fetch(`${base}/v1/runs/${failRun.run_id}/events`, { headers: { "last-event-id": String(seenBeforeCrash.at(-1)!.seq) } });
    expect(gone.status).toBe(410);
    const thread = (await call(base, `/v1/threads/${failThread}`)).body;
    expect(thread).toMatchObject({ status: "idle", active_run_id: null });

    const resumed = await waitForRun(base, resumeRun.run_id, (run) => run.status === "completed");
    expect(resumed.attempt).toBe(2);
    const history = (await call(base, `/v1/threads/${resumeThread}/history`)).body;
    expect(history.messages.map((message: any) => message.role)).toEqual(["user", "assistant"]);

    // A purposeful stop (SIGTERM) is not a failure: the run is handed back and finishes after restart.
    const drainThread = (await call(base, "/v1/threads", { method: "POST", json: {} })).body.thread_id;
    const drainRun = (await call(base, `/v1/threads/${drainThread}/runs`, { method: "POST", json: { input: { role: "user", content: "drain me" } } })).body;
    await readUntil(base, drainRun.run_id, (event) => event.type === "message.delta");
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
    server = await startServerProcess({ dbPath, port, env: SLOW_DEMO });
    const drained = await waitForRun(base, drainRun.run_id, (run) => run.status === "completed");
    expect(drained).toMatchObject({ attempt: 2, failure_reason: null });
    server.child.kill("SIGTERM");
    await server.exited;
    server = undefined;

    const check = await runCli(["check", "--db", dbPath]);
    expect(check.stdout).toMatch(/^0 violations/m);
    expect(check.code).toBe(0);
    // Three process starts and three slow answers: a guard for a loaded machine, not a pace the test needs.
  }, 120_000);

  it("tidemark check finds seeded violations in a corrupted copy and exits 1", async () => {
    const corrupted = join(dir, "corrupted.db");
    const source = new Database(dbPath);
    source.pragma("wal_checkpoint(TRUNCATE)");
    source.close();
    copyFileSync(dbPath, corrupted);
    const db = new Database(corrupted);
    const message = db.prepare("SELECT tenant_id, checkpoint_id FROM messages WHERE role = 'assistant' LIMIT 1").get() as {
      tenant_id: string;
      checkpoint_id: string;
    };
    db.prepare("DELETE FROM checkpoints WHERE tenant_id = ? AND checkpoint_id = ?").run(message.tenant_id, message.checkpoint_id);
    const failed = db.prepare("SELECT tenant_id, run_id, transition_count FROM runs WHERE status = 'failed' LIMIT 1").get() as {
      tenant_id: string;
      run_id: string;
      transition_count: number;
    };
    db.prepare("INSERT INTO run_transitions (tenant_id, run_id, ordinal, from_status, to_status, at) VALUES (?, ?, ?, 'failed', 'running', 0)").run(
      failed.tenant_id,
      failed.run_id,
      failed.transition_count + 1,
    );
    db.close();
    const check = await runCli(["check", "--db", corrupted]);
    expect(check.code).toBe(1);
    expect(check.stdout).toMatch(/invariant 1 /);
    expect(check.stdout).toMatch(/invariant 5 /);
    expect(check.stdout).toMatch(/invariant 6 /);
    expect(check.stdout).not.toMatch(/^0 violations/m);
  });
});
