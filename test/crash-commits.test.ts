/**
 * SIGKILL at random moments while consequential commits are in flight, over many restarts:
 * no external action is ever duplicated, every operation ends resolved (an unknown outcome is
 * confirmed through the tool's status hook), and `tidemark check` finds nothing wrong.
 */
import Database from "better-sqlite3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { readSseEvents } from "../src/stream/index.js";
import { eventually } from "./support/eventually.js";
import { pausesMs, raceDelay, withSeededSchedule } from "./support/seeded-schedule.js";
import { freePort, runCli, startServerProcess, type ServerProcess } from "./support/server-process.js";

const CYCLES = 10;
const THREADS_PER_CYCLE = 6;
const ENV = {
  TIDEMARK_DEMO_WORDS_PER_SECOND: "0",
  TIDEMARK_DEMO_WORDS: "10",
  TIDEMARK_DEMO_SEND_DELAY_MS: "25",
  TIDEMARK_DEMO_SEARCH_DELAY_MS: "5",
  TIDEMARK_LEASE_MS: "300",
};

async function call(base: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** Resolves once the run's stream shows an event of `type` (true), or ends without one (false). */
async function untilEvent(base: string, runId: string, type: RunEvent["type"], signal?: AbortSignal): Promise<boolean> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  signal?.addEventListener("abort", stop, { once: true });
  try {
    const response = await fetch(`${base}/v1/runs/${runId}/events`, { signal: controller.signal });
    for await (const message of readSseEvents(response.body!, { signal: controller.signal })) {
      if ((JSON.parse(message.data) as RunEvent).type === type) return true;
    }
    return false;
  } finally {
    signal?.removeEventListener("abort", stop);
    controller.abort();
  }
}

/** Resolves once one of the runs has committed its send (as its stream says). */
async function untilOneCommitted(base: string, runIds: readonly string[]): Promise<void> {
  const others = new AbortController();
  try {
    await Promise.any(
      runIds.map(async (runId) => {
        if (!(await untilEvent(base, runId, "tool.committed", others.signal))) throw new Error(`${runId} ended without a commit`);
      }),
    );
  } finally {
    others.abort();
  }
}

describe("SIGKILL during consequential commits (real processes)", () => {
  const dir = mkdtempSync(join(tmpdir(), "tidemark-crash-"));
  const dbPath = join(dir, "tidemark.db");
  let server: ServerProcess | undefined;
  afterAll(() => {
    server?.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it(`never duplicates an email over ${CYCLES * THREADS_PER_CYCLE} approved sends and ${CYCLES} crashes`, async () => {
    const port = await freePort();
    const threads: string[] = [];
    let approvals = 0;
    // When each cycle's SIGKILL lands, drawn from the seed (a failure prints it; TIDEMARK_SEED replays).
    await withSeededSchedule(pausesMs(CYCLES, 60), async (killAfterMs) => {
      for (const [cycle, killAfter] of killAfterMs.entries()) {
        server = await startServerProcess({ dbPath, port, env: ENV });
        const base = server.url;
        const runs = await Promise.all(
          Array.from({ length: THREADS_PER_CYCLE }, async (_, index) => {
            const threadId = (await call(base, "/v1/threads", {})).body.thread_id as string;
            threads.push(threadId);
            const run = await call(base, `/v1/threads/${threadId}/runs`, {
              input: { role: "user", content: `Please email user${index}@example.com about order ${cycle}-${index}` },
            });
            return run.body.run_id as string;
          }),
        );
        const interrupted = await Promise.all(runs.map((runId) => untilEvent(base, runId, "run.interrupted")));
        expect(interrupted.every(Boolean)).toBe(true);
        // Approve them all at once, then kill the process at a random moment while sends are in flight.
        const approving = runs.map((runId) => call(base, `/v1/runs/${runId}/approve`, {}).catch(() => undefined));
        approvals += runs.length;
        // Every fifth cycle the kill waits for a first commit, so commits surely happen whatever the machine's pace.
        if (cycle % 5 === 4) await untilOneCommitted(base, runs);
        await raceDelay(killAfter);
        server.child.kill("SIGKILL");
        await server.exited;
        await Promise.all(approving);
      }

      // A last start: recovery fails the lost runs, marks handed-over commits outcome_unknown.
      server = await startServerProcess({ dbPath, port, env: ENV });
      const base = server.url;
      for (const threadId of threads) {
        // Recovery follows each lost run's lease expiry in the server process: the thread's status shows it.
        await eventually(
          async () => {
            const thread = (await call(base, `/v1/threads/${threadId}`)).body;
            if (thread.status !== "idle") throw new Error(`thread ${threadId} is ${JSON.stringify(thread)}`);
          },
          { what: `thread ${threadId} becoming idle` },
        );
        // The next run confirms any unknown outcome first (the email tool's status hook asks the outbox).
        const next = await call(base, `/v1/threads/${threadId}/runs`, { input: { role: "user", content: "thanks, that is all" } });
        expect(next.status, JSON.stringify(next.body)).toBe(201);
      }
      const operations = (await Promise.all(threads.map((threadId) => call(base, `/v1/threads/${threadId}/operations`)))).flatMap(
        (response) => response.body.operations as any[],
      );
      server.child.kill("SIGTERM");
      await server.exited;
      server = undefined;

      expect(approvals).toBeGreaterThanOrEqual(50);
      const db = new Database(dbPath, { readonly: true });
      const sent = db.prepare("SELECT idempotency_key AS key, COUNT(*) AS n FROM demo_outbox GROUP BY idempotency_key").all() as {
        key: string;
        n: number;
      }[];
      db.close();
      // Exactly-once: no key was sent twice.
      expect(sent.filter((row) => row.n > 1)).toEqual([]);
      const sentKeys = new Set(sent.map((row) => row.key));
      // Every operation is resolved, and the ledger agrees with the outbox in both directions.
      for (const operation of operations) {
        expect(["committed", "failed", "abandoned"]).toContain(operation.phase);
        expect(operation.commit_attempts).toBeLessThanOrEqual(1);
        expect(sentKeys.has(operation.idempotency_key), `${operation.phase} ${operation.idempotency_key}`).toBe(operation.phase === "committed");
      }
      expect(operations.some((operation) => operation.phase === "committed")).toBe(true);

      const check = await runCli(["check", "--db", dbPath]);
      expect(check.stdout).toMatch(/^0 violations/m);
      expect(check.code).toBe(0);
    });
  }, 180_000);
});
