/**
 * `tidemark erase --tenant <id>`: erases every thread of one tenant (docs/data/lifetimes.md), each
 * as `DELETE /v1/threads/{id}?erase=true` does, branches before the threads they read through. A
 * dry run by default: it prints how many threads it would erase; `--apply` erases them. A thread
 * with a run still going is left as it is and named (exit 1): stop its run, then erase again.
 */
import type { Command } from "commander";
import { ConfigurationError, createId, systemClock } from "../core/index.js";
import type { Store } from "../store/index.js";
import { createPostgresStore } from "../store/postgres/index.js";
import { createSqliteStore } from "../store/sqlite/index.js";
import { isPostgresUrl } from "./cli-arguments.js";
import { fail, messageOf, redactUrl } from "./fail.js";

interface EraseOptions {
  db: string;
  schema?: string;
  tenant: string;
  apply?: boolean;
}

/** Adds `erase` to `program`. */
export function addEraseCommand(program: Command): void {
  program
    .command("erase")
    .description("erase every thread of a tenant (docs/data/lifetimes.md); a dry run unless --apply")
    .requiredOption("--db <file|url>", "SQLite database file, or postgres://…")
    .option("--schema <name>", "PostgreSQL schema (or TIDEMARK_DB_SCHEMA)", process.env.TIDEMARK_DB_SCHEMA)
    .requiredOption("--tenant <id>", "the tenant whose threads are erased")
    .option("--apply", "erase (without it, only count)")
    .addHelpText("after", "\nExit codes: 0 done, 1 a thread was left (a run of it is still going), 2 the store could not be opened.")
    .action(erase);
}

async function erase(options: EraseOptions): Promise<void> {
  // Opened read-only first: a missing, foreign or outdated store is refused before anything is created or migrated.
  const reader = await open(options, true).catch((error: unknown) => fail(messageOf(error)));
  let threadIds: string[];
  try {
    threadIds = await reader.listErasableThreads(options.tenant);
  } catch (error) {
    fail(`The erase stopped: ${messageOf(error)}`);
  } finally {
    await reader.close();
  }
  if (!options.apply) {
    process.stdout.write(`${threadIds.length} thread(s) of tenant ${options.tenant} to erase.\nDry run: nothing was changed. Run again with --apply to erase.\n`);
    return;
  }
  const store = await open(options, false).catch((error: unknown) => fail(messageOf(error)));
  const left: string[] = [];
  let erased = 0;
  try {
    for (const threadId of threadIds) {
      const result = await store.eraseThread({ tenantId: options.tenant, threadId, checkpointId: createId("cp"), now: systemClock.now() });
      if (result.kind === "erased") erased++;
      else if (result.kind === "run_in_progress") left.push(`${threadId} (run ${result.runs.map((run) => run.runId).join(", ")} has not ended)`);
      else if (result.kind === "has_branches") left.push(`${threadId} (branches ${result.branchIds.join(", ")} were left)`);
    }
  } catch (error) {
    fail(`The erase stopped after ${erased} thread(s): ${messageOf(error)}`);
  } finally {
    await store.close();
  }
  process.stdout.write(`Erased ${erased} thread(s) of tenant ${options.tenant}.\n`);
  for (const line of left) process.stdout.write(`left: ${line}\n`);
  process.exitCode = left.length > 0 ? 1 : 0;
}

async function open(options: EraseOptions, readOnly: boolean): Promise<Store> {
  if (!isPostgresUrl(options.db)) return createSqliteStore({ path: options.db, readOnly });
  return createPostgresStore({ url: options.db, schema: options.schema, readOnly }).catch((error: unknown) => {
    throw new ConfigurationError(`Cannot erase in ${redactUrl(options.db)}: ${messageOf(error)}`, { setting: "--db", cause: error });
  });
}
