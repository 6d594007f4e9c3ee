/**
 * A scaled Tidemark as real child processes: two API processes and two workers (`tidemark serve
 * --role api|worker`) on one PostgreSQL schema of their own, sharing one demo outbox file. A
 * worker can be signalled (SIGTERM drains, SIGKILL crashes) and replaced by a new process; which
 * worker holds a run is read from the run's lease in PostgreSQL.
 */
import Database from "better-sqlite3";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import type { RunEvent } from "../../src/core/index.js";
import { readSseEvents } from "../../src/stream/index.js";
import { dropTestSchema, newTestSchemaName, TEST_PG_URL } from "../../src/testing/postgres-test-database.js";
import { eventually } from "./eventually.js";
import { CLI, freePort, runCli } from "./server-process.js";

export type NodeRole = "api" | "worker";

/** One `tidemark serve` child process of the cluster. */
export interface ClusterNode {
  /** "api-a", "api-b", "worker-1", "worker-2" (a replacement keeps its slot's name). */
  name: string;
  role: NodeRole;
  url: string;
  port: number;
  /** The runtime's lease owner name, from the "tidemark serving" log line. */
  workerId: string;
  child: ChildProcess;
  /** Resolves with the exit code (or the signal's name) once the process ended. */
  exited: Promise<number | string>;
  /** Whether the process is still running. */
  isAlive(): boolean;
  /** Everything it wrote (stdout and stderr, interleaved; the last 256 kB). */
  log(): string;
}

/**
 * Short leases and polls, so recovery and hand-over happen within a test's time; the lease is
 * still long enough that a live worker starved of CPU on a loaded machine (heartbeat every
 * third of it) keeps its runs: only a killed worker's runs are recovered.
 */
export const CLUSTER_BASE_ENV: Record<string, string> = {
  TIDEMARK_LEASE_MS: "2000",
  TIDEMARK_POLL_MS: "200",
  // Four processes at once, beside the other test files, on one server's 100 connections.
  TIDEMARK_PG_POOL_SIZE: "4",
};

const MAX_LOG = 256 * 1024;

/** Starts one `tidemark serve` process; resolves once it says it is serving (with its worker id). */
async function startNode(options: {
  name: string;
  role: NodeRole;
  schema: string;
  outbox: string;
  env: Record<string, string>;
  databaseUrl: string;
}): Promise<ClusterNode> {
  const port = await freePort();
  const args = [CLI, "serve", "--db", options.databaseUrl, "--schema", options.schema, "--role", options.role, "--port", String(port), "--outbox", options.outbox];
  const child = spawn(process.execPath, args, { env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  let stderrLines = "";
  let stdout = "";
  let isAlive = true;
  const append = (text: string): void => {
    log += text;
    if (log.length > MAX_LOG) log = log.slice(-MAX_LOG);
  };
  const exited = new Promise<number | string>((resolve) =>
    child.once("exit", (code, signal) => {
      isAlive = false;
      resolve(code ?? signal ?? "unknown");
    }),
  );
  const workerId = await new Promise<string>((resolve, reject) => {
    let id: string | undefined;
    let isServing = false;
    const settle = (): void => {
      if (id && isServing) resolve(id);
    };
    child.stdout!.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      append(text);
      if (isServing) return;
      stdout += text;
      if (stdout.includes("Tidemark serving")) {
        isServing = true;
        settle();
      }
    });
    child.stderr!.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      append(text);
      if (id) return;
      stderrLines += text;
      for (const line of stderrLines.split("\n")) {
        if (!line.includes('"tidemark serving"')) continue;
        try {
          id = (JSON.parse(line) as { worker_id?: string }).worker_id;
        } catch {
          continue;
        }
        settle();
      }
    });
    void exited.then((code) => reject(new Error(`${options.name} exited (${code}) before serving:\n${log.slice(-4000)}`)));
  });
  return {
    name: options.name,
    role: options.role,
    url: `http://127.0.0.1:${port}`,
    port,
    workerId,
    child,
    exited,
    isAlive: () => isAlive,
    log: () => log,
  };
}

/** Options for {@link startCluster}. */
export interface ClusterOptions {
  /** More environment for every process (the demo model's pace, leases, …). */
  env?: Record<string, string>;
  /** The database address of a process, by name (e.g. `worker-1` through a TCP proxy); default the test database's. */
  databaseUrls?: Partial<Record<string, string>>;
}

/** Two API processes and two workers on one fresh schema; see {@link startCluster}. */
export class TestCluster {
  readonly schema: string;
  readonly dir: string;
  /** The demo outbox (SQLite) every process shares: the "external mail system". */
  readonly outboxPath: string;
  readonly env: Record<string, string>;
  apiA!: ClusterNode;
  apiB!: ClusterNode;
  /** workers[0] is worker 1, workers[1] worker 2; a replacement takes its slot. */
  readonly workers: ClusterNode[] = [];
  /** Every process ever started (for the final kill). */
  readonly #all: ClusterNode[] = [];
  readonly #pool: pg.Pool;
  readonly #databaseUrls: Partial<Record<string, string>>;

  constructor(options: ClusterOptions = {}) {
    this.#databaseUrls = options.databaseUrls ?? {};
    this.schema = newTestSchemaName("tm_cluster");
    this.dir = mkdtempSync(join(tmpdir(), "tidemark-cluster-"));
    this.outboxPath = join(this.dir, "outbox.db");
    this.env = { ...CLUSTER_BASE_ENV, ...options.env };
    this.#pool = new pg.Pool({ connectionString: TEST_PG_URL, max: 2 });
    // A database restart resets its idle connections: the pool drops them (an unheard error would end the test process).
    this.#pool.on("error", () => undefined);
  }

  /** The API processes, [A, B]. */
  get apis(): [ClusterNode, ClusterNode] {
    return [this.apiA, this.apiB];
  }

  async #start(name: string, role: NodeRole): Promise<ClusterNode> {
    const databaseUrl = this.#databaseUrls[name] ?? TEST_PG_URL;
    const node = await startNode({ name, role, schema: this.schema, outbox: this.outboxPath, env: this.env, databaseUrl });
    this.#all.push(node);
    return node;
  }

  /** API A first (it creates the schema), then API B and both workers together. */
  async start(): Promise<void> {
    this.apiA = await this.#start("api-a", "api");
    const [apiB, worker1, worker2] = await Promise.all([this.#start("api-b", "api"), this.#start("worker-1", "worker"), this.#start("worker-2", "worker")]);
    this.apiB = apiB;
    this.workers.push(worker1, worker2);
  }

  /** Starts a new worker process in slot `index` (after the old one ended). */
  async startWorker(index: number): Promise<ClusterNode> {
    const worker = await this.#start(`worker-${index + 1}`, "worker");
    this.workers[index] = worker;
    return worker;
  }

  /** Signals the API process in slot `index` (0 is A, 1 is B), waits for its exit, and starts a replacement there (on a new port). */
  async replaceApi(index: 0 | 1, signal: NodeJS.Signals): Promise<{ exit: number | string; old: ClusterNode; replacement: ClusterNode }> {
    const old = this.apis[index];
    const exit = await this.signal(old, signal);
    const replacement = await this.#start(old.name, "api");
    if (index === 0) this.apiA = replacement;
    else this.apiB = replacement;
    return { exit, old, replacement };
  }

  /** Sends `signal` to a process and waits until it ended; its exit code or signal name. */
  async signal(node: ClusterNode, signal: NodeJS.Signals, timeoutMs = 15_000): Promise<number | string> {
    if (!node.isAlive()) return node.exited;
    node.child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${node.name} did not exit within ${timeoutMs} ms of ${signal}:\n${node.log().slice(-4000)}`)), timeoutMs);
    });
    try {
      return await Promise.race([node.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Signals the worker in slot `index`, waits for its exit, and starts a replacement there. */
  async replaceWorker(index: number, signal: NodeJS.Signals): Promise<{ exit: number | string; old: ClusterNode; replacement: ClusterNode }> {
    const old = this.workers[index]!;
    const exit = await this.signal(old, signal);
    const replacement = await this.startWorker(index);
    return { exit, old, replacement };
  }

  /** A query on the cluster's schema (tables are qualified with it). */
  async query<Row extends pg.QueryResultRow = any>(sql: string, params: unknown[] = []): Promise<Row[]> {
    const result = await this.#pool.query<Row>(sql.replaceAll("{schema}", this.schema), params);
    return result.rows;
  }

  /** The worker id holding the run's lease (null when nobody holds it, e.g. queued or terminal). */
  async leaseOwner(runId: string): Promise<string | null> {
    const rows = await this.query<{ lease_owner: string | null }>("SELECT lease_owner FROM {schema}.runs WHERE run_id = $1", [runId]);
    return rows[0]?.lease_owner ?? null;
  }

  /** The slot of the (current) worker holding the run, or -1. */
  async workerIndexHolding(runId: string): Promise<number> {
    const owner = await this.leaseOwner(runId);
    return owner === null ? -1 : this.workers.findIndex((worker) => worker.workerId === owner);
  }

  /** Waits until a worker of the cluster holds the run (the lease is in the database); its slot. */
  waitForHolder(runId: string, timeoutMs = 30_000): Promise<number> {
    return eventually(
      async () => {
        const index = await this.workerIndexHolding(runId);
        if (index < 0) throw new Error(`the lease owner is ${await this.leaseOwner(runId)}`);
        return index;
      },
      { what: `a worker claiming ${runId}`, timeoutMs },
    );
  }

  /** The run's traces (kind and parsed data), oldest first. */
  async traces(runId: string): Promise<{ kind: string; data: Record<string, unknown> }[]> {
    const rows = await this.query<{ kind: string; data: string }>("SELECT kind, data FROM {schema}.traces WHERE run_id = $1 ORDER BY at, seq", [runId]);
    return rows.map((row) => ({ kind: row.kind, data: JSON.parse(row.data) as Record<string, unknown> }));
  }

  /** Rows per idempotency key in the shared demo outbox. */
  outboxCounts(): Map<string, number> {
    if (!existsSync(this.outboxPath)) return new Map();
    const db = new Database(this.outboxPath, { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare("SELECT idempotency_key AS key, COUNT(*) AS n FROM demo_outbox GROUP BY idempotency_key").all() as { key: string; n: number }[];
      return new Map(rows.map((row) => [row.key, row.n]));
    } finally {
      db.close();
    }
  }

  /** `tidemark check` over the cluster's schema. */
  check(): Promise<{ code: number; stdout: string; stderr: string }> {
    return runCli(["check", "--db", TEST_PG_URL, "--schema", this.schema]);
  }

  /** The last lines each process wrote (for a failure message). */
  logs(lines = 30): string {
    return this.#all.map((node) => `--- ${node.name} ${node.workerId} (${node.isAlive() ? "alive" : "ended"})\n${node.log().split("\n").slice(-lines).join("\n")}`).join("\n");
  }

  /** Kills every process still running, drops the schema and removes the files. */
  async stop(): Promise<void> {
    for (const node of this.#all) if (node.isAlive()) node.child.kill("SIGKILL");
    await Promise.all(this.#all.map((node) => node.exited));
    await this.#pool.end().catch(() => undefined);
    await dropTestSchema(this.schema).catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Starts API A, API B, worker 1 and worker 2 on a fresh schema. Call `stop()` in afterAll. */
export async function startCluster(options: ClusterOptions = {}): Promise<TestCluster> {
  const cluster = new TestCluster(options);
  try {
    await cluster.start();
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

/** A JSON call: GET without a body, POST with one (or `method`). */
export async function call(base: string, path: string, body?: unknown, method?: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method: method ?? (body === undefined ? "GET" : "POST"),
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** Creates a thread and starts a run on it; the run as created. */
export async function startRun(base: string, content: string, extra: Record<string, unknown> = {}): Promise<{ threadId: string; runId: string; run: any }> {
  const thread = await call(base, "/v1/threads", {});
  if (thread.status !== 201) throw new Error(`create thread: ${thread.status} ${JSON.stringify(thread.body)}`);
  const threadId = thread.body.thread_id as string;
  const run = await call(base, `/v1/threads/${threadId}/runs`, { input: { role: "user", content }, ...extra });
  if (run.status !== 201) throw new Error(`create run: ${run.status} ${JSON.stringify(run.body)}`);
  return { threadId, runId: run.body.run_id as string, run: run.body };
}

/** The run (read over HTTP, from another process) once `predicate` holds for it. */
export function waitForRun(base: string, runId: string, predicate: (run: any) => boolean, timeoutMs = 30_000): Promise<any> {
  return eventually(
    async () => {
      const { body } = await call(base, `/v1/runs/${runId}`);
      if (!predicate(body)) throw new Error(`run ${runId} is at ${JSON.stringify(body)}`);
      return body;
    },
    { what: `run ${runId} reaching the awaited state`, timeoutMs },
  );
}

export const TERMINAL_STATUSES = new Set(["completed", "cancelled", "failed"]);
export const isTerminal = (run: any): boolean => TERMINAL_STATUSES.has(run?.status);
export const TERMINAL_EVENTS = new Set(["run.completed", "run.cancelled", "run.failed"]);

/**
 * Reads a run's events from one API process: from `lastEventId` (Last-Event-ID) on, until
 * `until` holds for an event or the server ends the stream.
 */
export async function readEvents(
  base: string,
  runId: string,
  options: { lastEventId?: number; after?: number; until?: (event: RunEvent) => boolean; timeoutMs?: number } = {},
): Promise<RunEvent[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`reading ${runId} timed out`)), options.timeoutMs ?? 30_000);
  const query = options.after === undefined ? "" : `?after=${options.after}`;
  const events: RunEvent[] = [];
  try {
    const response = await fetch(`${base}/v1/runs/${runId}/events${query}`, {
      headers: options.lastEventId === undefined ? {} : { "last-event-id": String(options.lastEventId) },
      signal: controller.signal,
    });
    if (response.status !== 200) throw new Error(`events of ${runId}: ${response.status} ${await response.text()}`);
    for await (const message of readSseEvents(response.body!, { signal: controller.signal })) {
      const event = JSON.parse(message.data) as RunEvent;
      if (String(event.seq) !== message.id) throw new Error(`SSE id ${message.id} does not match seq ${event.seq}`);
      events.push(event);
      if (options.until?.(event)) break;
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return events;
}

/**
 * Follows a run's whole stream in the background (one SSE connection to `base`), keeping every
 * event; `until` resolves once an event matching the predicate arrived (or was already seen).
 */
export class StreamFollower {
  readonly events: RunEvent[] = [];
  /** Resolves with every event once the server ended the stream (rejects on an error). */
  readonly done: Promise<RunEvent[]>;
  readonly #waiters: { predicate: (event: RunEvent) => boolean; resolve: (event: RunEvent) => void; reject: (error: Error) => void }[] = [];
  #isEnded = false;

  constructor(
    readonly base: string,
    readonly runId: string,
    timeoutMs = 60_000,
  ) {
    this.done = readEvents(base, runId, {
      timeoutMs,
      until: (event) => {
        this.events.push(event);
        for (const waiter of [...this.#waiters]) {
          if (waiter.predicate(event)) {
            this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
            waiter.resolve(event);
          }
        }
        return false;
      },
    }).then(
      () => this.#end(),
      (error: Error) => this.#end(error),
    );
    // A failure is reported through `until` and `done`; never unhandled.
    this.done.catch(() => undefined);
  }

  #end(error?: Error): RunEvent[] {
    this.#isEnded = true;
    for (const waiter of this.#waiters.splice(0)) {
      waiter.reject(error ?? new Error(`the stream of ${this.runId} ended without the awaited event (last: ${this.events.at(-1)?.type})`));
    }
    if (error) throw error;
    return this.events;
  }

  /** The first event (seen so far or to come) matching `predicate`. */
  until(predicate: (event: RunEvent) => boolean, timeoutMs = 20_000): Promise<RunEvent> {
    const seen = this.events.find(predicate);
    if (seen) return Promise.resolve(seen);
    if (this.#isEnded) return Promise.reject(new Error(`the stream of ${this.runId} already ended (last: ${this.events.at(-1)?.type})`));
    return new Promise<RunEvent>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
        reject(new Error(`no matching event on ${this.runId} within ${timeoutMs} ms (last: ${JSON.stringify(this.events.at(-1))})`));
      }, timeoutMs);
      const waiter = {
        predicate,
        resolve: (event: RunEvent) => {
          clearTimeout(timer);
          resolve(event);
        },
        reject: (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.#waiters.push(waiter);
    });
  }
}

/** Seqs of attempt n start after (n − 1) × 1e9. */
export const ATTEMPT_STRIDE = 1_000_000_000;
export const attemptOfSeq = (seq: number): number => Math.floor((seq - 1) / ATTEMPT_STRIDE) + 1;

/**
 * Checks a run's stream is well formed across attempts: each attempt's events are gapless from
 * (attempt − 1)·1e9 + 1 and begin with `run.started {attempt}`; attempts only go forward; exactly
 * one terminal event, the last. Returns the events grouped by attempt.
 */
export function checkStreamShape(events: readonly RunEvent[]): Map<number, RunEvent[]> {
  const byAttempt = new Map<number, RunEvent[]>();
  let previous: RunEvent | undefined;
  for (const event of events) {
    const attempt = attemptOfSeq(event.seq);
    const list = byAttempt.get(attempt);
    if (!list) {
      if (previous && attemptOfSeq(previous.seq) >= attempt) throw new Error(`attempt went back at seq ${event.seq}`);
      const firstSeq = (attempt - 1) * ATTEMPT_STRIDE + 1;
      if (event.seq !== firstSeq || event.type !== "run.started") {
        throw new Error(`attempt ${attempt} starts with ${event.type} seq ${event.seq}, not run.started seq ${firstSeq}`);
      }
      if ((event as any).attempt !== attempt) throw new Error(`run.started of seq ${event.seq} says attempt ${(event as any).attempt}`);
      byAttempt.set(attempt, [event]);
    } else {
      if (event.seq !== previous!.seq + 1) throw new Error(`gap or duplicate: seq ${previous!.seq} then ${event.seq}`);
      list.push(event);
    }
    previous = event;
  }
  const terminals = events.filter((event) => TERMINAL_EVENTS.has(event.type));
  if (terminals.length !== 1 || events.at(-1) !== terminals[0]) {
    throw new Error(`expected one terminal event, last; got ${terminals.map((event) => `${event.type}@${event.seq}`).join(", ") || "none"}`);
  }
  return byAttempt;
}
