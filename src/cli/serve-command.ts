/** `tidemark serve`: every setting is read and checked first, so a configuration that cannot work exits 2 before anything is opened. */
import { InvalidArgumentError, Option, type Command } from "commander";
import { selectModel, MODEL_SPECS } from "../models/index.js";
import { redactLogger, type Redactor } from "../core/index.js";
import { createJsonLogger, type ChatModel, type RuntimeRole } from "../runtime/index.js";
import { DEFAULT_RATE_LIMIT, DEFAULT_WEB_ROOT, parseApiKeys } from "../server/index.js";
import { startTidemark } from "../start-tidemark.js";
import type { Store } from "../store/index.js";
import { createSqliteStore } from "../store/sqlite/index.js";
import { createDemoOutbox } from "../tools/demo-outbox.js";
import { createDemoTools } from "../tools/demo-tools.js";
import type { Tool } from "../tools/tool.js";
import { environmentNumber, isPostgresUrl, wholeNumber } from "./cli-arguments.js";
import { fail, messageOf } from "./fail.js";
import { retentionFromEnvironment } from "./retention-settings.js";
import type { RetentionSettings } from "../core/index.js";
import { CONFIG_FILE_NAMES, loadConfig, type LoadedConfig } from "./load-config.js";
import { redactorFromEnvironment } from "./redaction-settings.js";

interface ServeOptions {
  port: number;
  host: string;
  db: string;
  schema?: string;
  role: RuntimeRole;
  outbox?: string;
  model: string;
  web: string | false;
  config?: string;
}

/** Adds `serve` to `program`. */
export function addServeCommand(program: Command): void {
  program
    .command("serve")
    .description("serve the HTTP API (SQLite + the built-in demo model by default)")
    .option("--port <port>", "port to listen on", wholeNumber("port"), 8787)
    .option("--host <host>", "address to bind (loopback only unless TIDEMARK_API_KEYS is set)", "127.0.0.1")
    .option("--db <file|url>", "SQLite database file, or postgres://… for the scaled deployment", process.env.TIDEMARK_DB ?? "./tidemark.db")
    .option("--schema <name>", "PostgreSQL schema (default the connection's search_path; or TIDEMARK_DB_SCHEMA)", process.env.TIDEMARK_DB_SCHEMA)
    .option("--role <role>", "api | worker | all (api and worker need PostgreSQL)", role, "all")
    .option("--outbox <file>", "the demo email outbox (SQLite; default the --db file, or ./tidemark-outbox.db with PostgreSQL)")
    .option("--model <name>", `model: ${MODEL_SPECS.join(" | ")} (or TIDEMARK_MODEL)`, process.env.TIDEMARK_MODEL ?? "demo")
    .option("--web <dir>", "the built web app to serve at / (npm run build:web)", DEFAULT_WEB_ROOT)
    .option("--no-web", "serve the API only")
    .addOption(
      new Option("--config <file>", `the agents and tools to deploy (default ${CONFIG_FILE_NAMES.join(", ")} in the working directory, if any)`).env(
        "TIDEMARK_CONFIG",
      ),
    )
    .action(serve);
}

/** The numeric settings, read once and checked together. */
function numericSettings(env: NodeJS.ProcessEnv) {
  const read = (name: string) => environmentNumber(env, name);
  return {
    workerConcurrency: read("TIDEMARK_WORKER_CONCURRENCY"),
    poolSize: read("TIDEMARK_PG_POOL_SIZE"),
    pollMs: read("TIDEMARK_POLL_MS"),
    leaseMs: read("TIDEMARK_LEASE_MS"),
    shieldTimeoutMs: read("TIDEMARK_SHIELD_TIMEOUT_MS"),
    eventTtlMs: read("TIDEMARK_EVENT_TTL_MS"),
    pruneIntervalMs: read("TIDEMARK_PRUNE_INTERVAL_MS"),
    heartbeatMs: read("TIDEMARK_HEARTBEAT_MS"),
    sendDelayMs: read("TIDEMARK_DEMO_SEND_DELAY_MS"),
    searchDelayMs: read("TIDEMARK_DEMO_SEARCH_DELAY_MS"),
    maxBodyBytes: read("TIDEMARK_MAX_BODY_BYTES"),
    maxInputChars: read("TIDEMARK_MAX_INPUT_CHARS"),
    maxActiveRunsPerTenant: read("TIDEMARK_MAX_ACTIVE_RUNS"),
    maxQueuedRunsPerTenant: read("TIDEMARK_MAX_QUEUED_RUNS"),
    maxStreamsPerTenant: read("TIDEMARK_MAX_STREAMS_PER_TENANT"),
    maxStreamsPerRun: read("TIDEMARK_MAX_STREAMS_PER_RUN"),
    requestsPerSecond: read("TIDEMARK_RATE_LIMIT_RPS"),
    requestBurst: read("TIDEMARK_RATE_LIMIT_BURST"),
    headersTimeoutMs: read("TIDEMARK_HEADERS_TIMEOUT_MS"),
    requestTimeoutMs: read("TIDEMARK_REQUEST_TIMEOUT_MS"),
  };
}

/** The limits a deployment sets (docs/reliability.md, "Limits"); the defaults for those it leaves out. */
function limitSettings(settings: ReturnType<typeof numericSettings>) {
  const { maxInputChars, maxActiveRunsPerTenant, maxQueuedRunsPerTenant, maxStreamsPerTenant, maxStreamsPerRun } = settings;
  const limits = Object.fromEntries(
    Object.entries({ maxInputChars, maxActiveRunsPerTenant, maxQueuedRunsPerTenant, maxStreamsPerTenant, maxStreamsPerRun }).filter(([, value]) => value !== undefined),
  );
  return {
    limits,
    rateLimit: { requestsPerSecond: settings.requestsPerSecond ?? DEFAULT_RATE_LIMIT.requestsPerSecond, burst: settings.requestBurst ?? DEFAULT_RATE_LIMIT.burst },
    maxBodyBytes: settings.maxBodyBytes,
    headersTimeoutMs: settings.headersTimeoutMs,
    requestTimeoutMs: settings.requestTimeoutMs,
  };
}

async function serve(options: ServeOptions, command: Command): Promise<void> {
  let settings: ReturnType<typeof numericSettings>;
  let apiKeys: Map<string, string>;
  let model: ChatModel;
  let config: LoadedConfig | undefined;
  let redactor: Redactor;
  let retention: Partial<RetentionSettings>;
  try {
    settings = numericSettings(process.env);
    retention = retentionFromEnvironment(process.env);
    apiKeys = parseApiKeys(process.env.TIDEMARK_API_KEYS);
    const settingsRedactor = redactorFromEnvironment(process.env);
    // The logger is made once the redactor is known (below); the model warns only while serving.
    model = selectModel(options.model, process.env, (error) => logger.warn({ error: String(error) }, "provider cancel call failed"));
    // The config's own code runs here, before any database is opened: an agent it cannot deploy refuses the start.
    config = await loadConfig({
      file: options.config || undefined,
      setting: command.getOptionValueSource("config") === "env" ? "TIDEMARK_CONFIG" : "--config",
      cwd: process.cwd(),
    });
    // A config's redactor is used instead of the settings' one.
    redactor = config?.redactor ?? settingsRedactor;
  } catch (error) {
    fail(messageOf(error));
  }
  // Every line this process writes passes through the redactor, its own lines included.
  const logger = redactLogger(createJsonLogger(), redactor);
  const isPostgres = isPostgresUrl(options.db);
  // The SQLite file is taken for this process before anything else opens it: a second server on it is refused untouched.
  let store: Store | undefined;
  if (!isPostgres) {
    if (options.role !== "all") fail(`The ${options.role} role needs PostgreSQL (--db postgres://…); SQLite runs everything in one process.`);
    try {
      store = createSqliteStore({ path: options.db, exclusive: true });
    } catch (error) {
      fail(messageOf(error));
    }
  }
  // The demo tools come with the demo model (or on request): their outbox shares the database file.
  const isDemoTools = options.model === "demo" || process.env.TIDEMARK_DEMO_TOOLS === "1";
  // The outbox stands for an external mail system: with PostgreSQL it is a file the workers of one machine share.
  const outboxPath = options.outbox ?? (isPostgres ? "./tidemark-outbox.db" : options.db);
  const outbox = isDemoTools ? createDemoOutbox(outboxPath, { sendDelayMs: settings.sendDelayMs }) : undefined;
  const tools = withConfigTools(outbox ? createDemoTools({ outbox, searchDelayMs: settings.searchDelayMs }) : [], config?.tools ?? []);
  const tidemark = await startTidemark({
    ...(isPostgres ? { databaseUrl: options.db, databaseSchema: options.schema } : { store }),
    role: options.role,
    maxConcurrentRuns: settings.workerConcurrency,
    databasePoolSize: settings.poolSize,
    pollMs: settings.pollMs,
    host: options.host,
    port: options.port,
    apiKeys,
    logger,
    redactor,
    model,
    tools,
    agents: config?.agents,
    leaseMs: settings.leaseMs,
    shieldTimeoutMs: settings.shieldTimeoutMs,
    eventTtlMs: settings.eventTtlMs,
    retention: { ...config?.retention, ...retention },
    pruneIntervalMs: settings.pruneIntervalMs,
    heartbeatMs: settings.heartbeatMs,
    webRoot: options.web === false ? undefined : options.web,
    ...limitSettings(settings),
  }).catch(async (error: unknown) => {
    await store?.close();
    return fail(messageOf(error));
  });
  const where = isPostgres ? "postgres" : options.db;
  const agents = tidemark.runtime.agents.list().map((agent) => agent.name);
  logger.info(
    { url: tidemark.url, db: where, role: options.role, worker_id: tidemark.runtime.workerId, model: options.model, config: config?.file ?? null, agents },
    "tidemark serving",
  );
  const deployed = config ? `, config ${config.file} with ${config.agents.map((agent) => agent.name).join(" ") || "no agents"}` : "";
  process.stdout.write(`Tidemark serving ${tidemark.url} (db ${where}, role ${options.role}, model ${options.model}${deployed})\n`);
  let isStopping = false;
  const stop = (): void => {
    if (isStopping) return;
    isStopping = true;
    tidemark.close().then(
      () => {
        outbox?.close();
        process.exit(0);
      },
      () => process.exit(1),
    );
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

/** The default tools and the config's: a config tool with a default tool's name replaces it. */
function withConfigTools(defaults: readonly Tool[], configured: readonly Tool[]): Tool[] {
  const names = new Set(configured.map((tool) => tool.name));
  return [...defaults.filter((tool) => !names.has(tool.name)), ...configured];
}

function role(value: string): RuntimeRole {
  if (value !== "api" && value !== "worker" && value !== "all") throw new InvalidArgumentError("role must be api, worker or all.");
  return value;
}
