/** `tidemark check`: reads a store without writing to it and reports what breaks its invariants. */
import { Option, type Command } from "commander";
import { ConfigurationError } from "../core/index.js";
import { checkStore, DEFAULT_STALE_AFTER_MS, formatCheckReport, INVARIANTS } from "../check/index.js";
import type { Store } from "../store/index.js";
import { createPostgresStore } from "../store/postgres/index.js";
import { createSqliteStore } from "../store/sqlite/index.js";
import { duration, isPostgresUrl } from "./cli-arguments.js";
import { fail, messageOf, redactUrl } from "./fail.js";

interface CheckOptions {
  db: string;
  schema?: string;
  staleAfter: number;
}

const HELP = `
Invariants checked (docs/invariants.md says how):
${INVARIANTS.map((invariant) => `  ${invariant.number}. ${invariant.statement}`).join("\n")}
Stale runs: unfinished runs whose lease expired, or that were queued, longer ago than
--stale-after, are listed as warnings; they break no invariant (the next start recovers them).

The store is opened read-only: nothing is created or migrated.
Exit codes: 0 no violation (warnings allowed), 1 a violation, 2 the store could not be checked.`;

/** Adds `check` to `program`. */
export function addCheckCommand(program: Command): void {
  program
    .command("check")
    .description("check a store's invariants without writing to it (docs/invariants.md); exits 1 on a violation")
    .requiredOption("--db <file|url>", "SQLite database file, or postgres://…")
    .option("--schema <name>", "PostgreSQL schema (or TIDEMARK_DB_SCHEMA)", process.env.TIDEMARK_DB_SCHEMA)
    .addOption(
      new Option("--stale-after <duration>", "warn about unfinished runs idle longer than this (e.g. 90s, 10m, 2h)")
        .argParser(duration("--stale-after"))
        .default(DEFAULT_STALE_AFTER_MS, "10m"),
    )
    .addHelpText("after", HELP)
    .action(check);
}

async function check(options: CheckOptions): Promise<void> {
  const store = await openReadOnly(options).catch((error: unknown) => fail(messageOf(error)));
  try {
    const report = await checkStore(store, { staleAfterMs: options.staleAfter });
    process.stdout.write(`${formatCheckReport(report)}\n`);
    process.exitCode = report.violations.length > 0 ? 1 : 0;
  } catch (error) {
    fail(`The check stopped: ${messageOf(error)}`);
  } finally {
    await store.close();
  }
}

async function openReadOnly(options: CheckOptions): Promise<Store> {
  if (!isPostgresUrl(options.db)) return createSqliteStore({ path: options.db, readOnly: true });
  return createPostgresStore({ url: options.db, schema: options.schema, readOnly: true }).catch((error: unknown) => {
    throw new ConfigurationError(`Cannot check ${redactUrl(options.db)}: ${messageOf(error)}`, { setting: "--db", cause: error });
  });
}
