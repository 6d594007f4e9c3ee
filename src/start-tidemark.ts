import type { Cluster } from "./runtime/cluster.js";
import { createPgCluster } from "./store/postgres/cluster/index.js";
import { ConfigurationError, defaultRedactor, redactLogger, type Clock, type RecoveryPolicy, type Redactor, type RetentionSettings, type Timers } from "./core/index.js";
import { createPostgresStore } from "./store/postgres/index.js";
import type { Store } from "./store/index.js";
import type { Tool } from "./tools/index.js";
import type { Agent } from "./agents/index.js";
import { checkAgents } from "./config/index.js";
import { createSqliteStore } from "./store/sqlite/index.js";
import {
  createDemoModel,
  createRuntime,
  silentLogger,
  type ChatModel,
  type Logger,
  type Runtime,
  type RuntimeRole,
  type RunLimits,
} from "./runtime/index.js";
import { createServerMetrics, startServer, type RateLimitOptions, type RunningServer } from "./server/index.js";

/** Options for {@link startTidemark}. */
export interface TidemarkOptions {
  /**
   * SQLite file (default `./tidemark.db`), held for this process alone while it serves (another
   * process is refused with `DatabaseLockedError`); ignored when `store` or `databaseUrl` is given.
   */
  dbPath?: string;
  /** `postgres://…`: the scaled deployment, with API and worker processes on one database. */
  databaseUrl?: string;
  /** With `databaseUrl`: a schema of its own (default the connection's search_path). */
  databaseSchema?: string;
  /** With `databaseUrl`: connections in the store's pool (default 10). */
  databasePoolSize?: number;
  /** With `databaseUrl`: `api`, `worker` or `all` (default). */
  role?: RuntimeRole;
  /** A worker executes at most this many runs at once (default 64). */
  maxConcurrentRuns?: number;
  /** How often a worker looks for work and for cancels without a notification (default 1000 ms). */
  pollMs?: number;
  store?: Store;
  /** The model (default: the built-in demo model). */
  model?: ChatModel;
  host?: string;
  /** 0 picks a free port (default 8787). */
  port?: number;
  /** API key → tenant; empty serves one local tenant and requires a loopback host. */
  apiKeys?: ReadonlyMap<string, string>;
  logger?: Logger;
  /**
   * What traces, log lines (the server's, the store's and the runtime's), OpenTelemetry
   * attributes and operation previews pass through (docs/data/redaction.md). Default
   * `defaultRedactor` (emails and card numbers masked); `noRedaction` turns it off.
   */
  redactor?: Redactor;
  eventTtlMs?: number;
  /** How long each layer is kept (docs/data/lifetimes.md); the defaults for those left out. */
  retention?: Partial<RetentionSettings>;
  /** How often the pruner runs (default 10 minutes). */
  pruneIntervalMs?: number;
  leaseMs?: number;
  heartbeatMs?: number;
  maxBacklogEvents?: number;
  stallTimeoutMs?: number;
  /** How long an SSE subscriber cut for being too slow may take to drain its last comment before its socket is destroyed (default 5 s). */
  farewellTimeoutMs?: number;
  recoveryPolicy?: RecoveryPolicy;
  disconnectGraceMs?: number;
  /** How long a tool's commit may go on after a Stop or a shutdown before it is recorded `outcome_unknown` (default 30 s). */
  shieldTimeoutMs?: number;
  /** The runtime's timers: event TTL, disconnect grace, leases (default the system's); tests pass fake ones. */
  timers?: Timers;
  /** The runtime's clock: run timestamps and lease expiries (default the system's); tests pass a fake one with fake timers. */
  clock?: Clock;
  /** The tools the model may call. */
  tools?: readonly Tool[];
  /**
   * The agents runs may name (DESIGN §11; `defineAgent`), deployed beside the built-in `chat` (the
   * default) and `research`; one with a built-in's name replaces it. Checked before anything is
   * opened (`AgentDefinitionError`). Every process of a deployment, API and worker alike, needs
   * the same agents: a worker fails a run whose agent it does not deploy.
   */
  agents?: readonly Agent[];
  /** The built web app's directory, served at `/` (the CLI passes `dist/web`); none when left out. */
  webRoot?: string;
  /** What one tenant may hold at once: runs, input length, event streams (docs/reliability.md, "Limits"). */
  limits?: Partial<RunLimits>;
  /** Each tenant's request rate (default 1,000 a second, bursts of 2,000). */
  rateLimit?: RateLimitOptions;
  /** Largest request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  /** A request's headers must arrive within this (default 10 s). */
  headersTimeoutMs?: number;
  /** A request's headers and body must arrive within this (default 60 s). */
  requestTimeoutMs?: number;
}

/** A running Tidemark: store, runtime and HTTP server. */
export interface Tidemark {
  url: string;
  port: number;
  store: Store;
  runtime: Runtime;
  server: RunningServer;
  /** Drains: hands running runs back (another worker, or the next start, takes them), then closes. */
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

/**
 * Starts the embedded product: SQLite + the runtime + the HTTP API.
 *
 * @example
 * const tidemark = await startTidemark({ dbPath: "./tidemark.db", port: 8787, agents: [compareAgent] });
 * console.log(`serving ${tidemark.url}`);
 */
export async function startTidemark(options: TidemarkOptions = {}): Promise<Tidemark> {
  const host = options.host ?? "127.0.0.1";
  const apiKeys = options.apiKeys ?? new Map<string, string>();
  if (apiKeys.size === 0 && !LOOPBACK.has(host)) {
    throw new ConfigurationError(`Without TIDEMARK_API_KEYS the server only binds a loopback address, not ${host}.`, { setting: "host" });
  }
  // An agent that cannot be deployed refuses the start before a database is opened (the runtime would refuse it after).
  checkAgents(options.agents ?? []);
  const redactor = options.redactor ?? defaultRedactor;
  // Redacted once here: the store, the cluster, the runtime and the server all log through it.
  const logger = redactLogger(options.logger ?? silentLogger, redactor);
  const role = options.role ?? "all";
  let store: Store;
  let cluster: Cluster | undefined;
  if (options.databaseUrl) {
    const database = { url: options.databaseUrl, schema: options.databaseSchema };
    store = options.store ?? (await createPostgresStore({ ...database, poolSize: options.databasePoolSize, logger }));
    cluster = await createPgCluster({ ...database, logger }).catch(async (error: unknown) => {
      await store.close();
      throw error;
    });
  } else {
    if (role !== "all") throw new ConfigurationError(`The ${role} role needs PostgreSQL (--db postgres://…); SQLite runs everything in one process.`, { setting: "role" });
    // One serving process per file: a second one would run generations a Stop here never reaches.
    store = options.store ?? createSqliteStore({ path: options.dbPath ?? "./tidemark.db", exclusive: true });
  }
  const metrics = createServerMetrics();
  const runtime = createRuntime({
    store,
    model: options.model ?? createDemoModel(),
    logger,
    redactor,
    eventTtlMs: options.eventTtlMs,
    retention: options.retention,
    pruneIntervalMs: options.pruneIntervalMs,
    leaseMs: options.leaseMs,
    recoveryPolicy: options.recoveryPolicy,
    disconnectGraceMs: options.disconnectGraceMs,
    shieldTimeoutMs: options.shieldTimeoutMs,
    timers: options.timers,
    clock: options.clock,
    tools: options.tools,
    agents: options.agents,
    observer: metrics.observer,
    role,
    cluster,
    maxConcurrentRuns: options.maxConcurrentRuns,
    pollMs: options.pollMs,
    limits: options.limits,
  });
  await runtime.start();
  const server = await startServer({
    runtime,
    metrics,
    apiKeys,
    logger,
    host,
    port: options.port ?? 8787,
    heartbeatMs: options.heartbeatMs,
    maxBacklogEvents: options.maxBacklogEvents,
    stallTimeoutMs: options.stallTimeoutMs,
    farewellTimeoutMs: options.farewellTimeoutMs,
    webRoot: options.webRoot,
    timers: options.timers,
    rateLimit: options.rateLimit,
    maxBodyBytes: options.maxBodyBytes,
    headersTimeoutMs: options.headersTimeoutMs,
    requestTimeoutMs: options.requestTimeoutMs,
  });
  return {
    url: server.url,
    port: server.port,
    store,
    runtime,
    server,
    async close() {
      await server.closeLiveSessions();
      await runtime.close();
      await server.close();
      await cluster?.close();
      await store.close();
    },
  };
}
