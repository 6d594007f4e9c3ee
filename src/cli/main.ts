#!/usr/bin/env node
import { Command, InvalidArgumentError } from "commander";
import { existsSync } from "node:fs";
import { checkStore, formatCheckReport } from "../check/index.js";
import { selectModel, MODEL_SPECS } from "../models/index.js";
import { createDemoOutbox } from "../tools/demo-outbox.js";
import { createDemoTools } from "../tools/demo-tools.js";
import { createJsonLogger, type ChatModel, type RuntimeRole } from "../runtime/index.js";
import { DEFAULT_WEB_ROOT, parseApiKeys } from "../server/index.js";
import { startTidemark } from "../start-tidemark.js";
import type { Store } from "../store/index.js";
import { createPostgresStore } from "../store/postgres/index.js";
import { createSqliteStore } from "../store/sqlite/index.js";

const integer = (name: string) => (value: string) => {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number.`);
  return Number(value);
};
const envNumber = (name: string): number | undefined => (process.env[name] ? Number(process.env[name]) : undefined);

const program = new Command("tidemark").description("Agent runs whose Stop, disconnect and resume are honest.");

program
  .command("serve")
  .description("serve the HTTP API (SQLite + the built-in demo model by default)")
  .option("--port <port>", "port to listen on", integer("port"), 8787)
  .option("--host <host>", "address to bind (loopback only unless TIDEMARK_API_KEYS is set)", "127.0.0.1")
  .option("--db <file|url>", "SQLite database file, or postgres://… for the scaled deployment", process.env.TIDEMARK_DB ?? "./tidemark.db")
  .option("--schema <name>", "PostgreSQL schema (default the connection's search_path; or TIDEMARK_DB_SCHEMA)", process.env.TIDEMARK_DB_SCHEMA)
  .option("--role <role>", "api | worker | all (api and worker need PostgreSQL)", role, "all")
  .option("--outbox <file>", "the demo email outbox (SQLite; default the --db file, or ./tidemark-outbox.db with PostgreSQL)")
  .option("--model <name>", `model: ${MODEL_SPECS.join(" | ")} (or TIDEMARK_MODEL)`, process.env.TIDEMARK_MODEL ?? "demo")
  .option("--web <dir>", "the built web app to serve at / (npm run build:web)", DEFAULT_WEB_ROOT)
  .option("--no-web", "serve the API only")
  .action(async (options: {
    port: number;
    host: string;
    db: string;
    schema?: string;
    role: RuntimeRole;
    outbox?: string;
    model: string;
    web: string | false;
  }) => {
    const logger = createJsonLogger();
    let model: ChatModel;
    try {
      model = selectModel(options.model, process.env, (error) => logger.warn({ error: String(error) }, "provider cancel call failed"));
    } catch (error) {
      fail(error instanceof Error ? error.message : String(error));
    }
    // The demo tools come with the demo model (or on request): their outbox shares the database file.
    const isDemoTools = options.model === "demo" || process.env.TIDEMARK_DEMO_TOOLS === "1";
    const isPostgres = isPostgresUrl(options.db);
    // The outbox stands for an external mail system: with PostgreSQL it is a file the workers of one machine share.
    const outboxPath = options.outbox ?? (isPostgres ? "./tidemark-outbox.db" : options.db);
    const outbox = isDemoTools ? createDemoOutbox(outboxPath, { sendDelayMs: envNumber("TIDEMARK_DEMO_SEND_DELAY_MS") }) : undefined;
    const tools = outbox ? createDemoTools({ outbox, searchDelayMs: envNumber("TIDEMARK_DEMO_SEARCH_DELAY_MS") }) : [];
    const tidemark = await startTidemark({
      ...(isPostgres ? { databaseUrl: options.db, databaseSchema: options.schema } : { dbPath: options.db }),
      role: options.role,
      maxConcurrentRuns: envNumber("TIDEMARK_WORKER_CONCURRENCY"),
      databasePoolSize: envNumber("TIDEMARK_PG_POOL_SIZE"),
      pollMs: envNumber("TIDEMARK_POLL_MS"),
      host: options.host,
      port: options.port,
      apiKeys: parseApiKeys(process.env.TIDEMARK_API_KEYS),
      logger,
      model,
      tools,
      leaseMs: envNumber("TIDEMARK_LEASE_MS"),
      eventTtlMs: envNumber("TIDEMARK_EVENT_TTL_MS"),
      heartbeatMs: envNumber("TIDEMARK_HEARTBEAT_MS"),
      webRoot: options.web === false ? undefined : options.web,
    }).catch((error: unknown) => fail(error instanceof Error ? error.message : String(error)));
    const where = isPostgres ? "postgres" : options.db;
    logger.info({ url: tidemark.url, db: where, role: options.role, worker_id: tidemark.runtime.workerId, model: options.model }, "tidemark serving");
    process.stdout.write(`Tidemark serving ${tidemark.url} (db ${where}, role ${options.role}, model ${options.model})\n`);
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
  });

program
  .command("check")
  .description("check the invariants of DESIGN §15 over a store; exits 1 if any is violated")
  .requiredOption("--db <file|url>", "SQLite database file, or postgres://…")
  .option("--schema <name>", "PostgreSQL schema (or TIDEMARK_DB_SCHEMA)", process.env.TIDEMARK_DB_SCHEMA)
  .action(async (options: { db: string; schema?: string }) => {
    let store: Store;
    if (isPostgresUrl(options.db)) {
      store = await createPostgresStore({ url: options.db, schema: options.schema }).catch((error: unknown) =>
        fail(`Cannot open ${options.db}: ${error instanceof Error ? error.message : String(error)}`),
      );
    } else {
      if (!existsSync(options.db)) fail(`No database at ${options.db}.`);
      store = createSqliteStore({ path: options.db });
    }
    try {
      const report = await checkStore(store);
      process.stdout.write(`${formatCheckReport(report)}\n`);
      process.exitCode = report.violations.length > 0 ? 1 : 0;
    } finally {
      await store.close();
    }
  });

function role(value: string): RuntimeRole {
  if (value !== "api" && value !== "worker" && value !== "all") throw new InvalidArgumentError("role must be api, worker or all.");
  return value;
}

function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//.test(db);
}

function fail(message: string): never {
  process.stderr.write(`tidemark: ${message}\n`);
  process.exit(2);
}

await program.parseAsync(process.argv);
