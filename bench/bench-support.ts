import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { createId, type RunRecord } from "../src/core/index.js";
import type { Store } from "../src/store/index.js";

/** Small helpers the benchmarks share: bounded waits, temp dirs, a free loopback port, JSON requests. */

/** Rejects when `promise` has not settled within `ms`; every wait in the benchmarks is bounded. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A fresh temporary directory and the function that removes it. */
export function createTempDir(prefix: string): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), `tidemark-bench-${prefix}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A port that was free on 127.0.0.1 a moment ago (for a child that needs a fixed `--port`). */
export async function findFreePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === "string") throw new Error("no port assigned");
  return address.port;
}

/** A JSON request (`body` undefined: none); throws unless the status is one of `expect`. */
export async function requestJson<T>(method: string, url: string, body: unknown, expect: readonly number[]): Promise<T> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!expect.includes(response.status)) throw new Error(`${method} ${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/** Runs `task` over `items` with at most `limit` in flight; resolves with the results in order. */
export async function mapLimited<T, R>(items: readonly T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index]!, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Resolves on the next turn of the event loop (after pending I/O callbacks). */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Reads a SQLite file's size through a separate read-only connection (the WAL is included). */
export function openSizeInspector(path: string): { usedBytes(): number; payloadBytes(): number; close(): void } {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const pageSize = db.pragma("page_size", { simple: true }) as number;
  return {
    usedBytes: () => ((db.pragma("page_count", { simple: true }) as number) - (db.pragma("freelist_count", { simple: true }) as number)) * pageSize,
    payloadBytes: () => (db.prepare("SELECT SUM(payload) AS bytes FROM dbstat").get() as { bytes: number }).bytes,
    close: () => db.close(),
  };
}

/**
 * One consequential action through the operation ledger as a tool call makes it: prepared, its
 * commit begun, `send` run, and its result recorded as committed.
 */
export async function commitThroughLedger(
  store: Store,
  action: { tenantId: string; threadId: string; runId: string; toolCallId: string; idempotencyKey: string; input: unknown },
  send: () => Promise<unknown>,
): Promise<void> {
  const { tenantId, runId } = action;
  const prepared = await store.prepareOperation({
    tenantId,
    opId: createId("op"),
    threadId: action.threadId,
    runId,
    toolName: "send_email",
    toolCallId: action.toolCallId,
    idempotencyKey: action.idempotencyKey,
    input: JSON.stringify(action.input),
    preview: null,
    checkpointId: createId("cp"),
    now: Date.now(),
  });
  if (prepared.kind !== "prepared") throw new Error(`prepare: ${prepared.kind}`);
  const begun = await store.beginCommit({ tenantId, opId: prepared.operation.opId, runId, now: Date.now() });
  if (begun.kind !== "committing") throw new Error("beginCommit refused");
  const result = await send();
  await store.finishOperation({ tenantId, opId: prepared.operation.opId, phase: "committed", result, now: Date.now() });
}

/** A run accepted on `threadId` and claimed by the benchmark, ready to publish through the Store API. */
export async function startClaimedRun(store: Store, tenantId: string, threadId: string, content: string): Promise<RunRecord> {
  const now = Date.now();
  const created = await store.createRun({
    tenantId,
    runId: createId("run"),
    threadId,
    input: { role: "user", content },
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: null,
    requestHash: "bench",
    model: "bench",
    onDisconnect: "continue",
    recoveryPolicy: "fail",
    expectedStateVersion: null,
    now,
  });
  if (created.kind !== "created") throw new Error(`createRun answered ${created.kind}`);
  const run = await store.claimRun({ tenantId, runId: created.run.runId, owner: "bench", leaseExpiresAt: now + 3_600_000, now });
  if (!run) throw new Error("claimRun failed");
  return run;
}
