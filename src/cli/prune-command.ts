/**
 * `tidemark prune`: expires each layer past its retention (docs/data/lifetimes.md), as the server's
 * pruner does. A dry run by default: it prints how many rows of each layer have expired and changes
 * nothing; `--apply` prunes them, a bounded batch at a time.
 */
import { Option, type Command } from "commander";
import { ConfigurationError, RETENTION_LAYERS, retentionCutoffs, silentLogger, systemClock, systemTimers, type RetentionLayer, type RetentionSettings } from "../core/index.js";
import { DEFAULT_PRUNE_BATCH_SIZE, RetentionPruner } from "../runtime/retention-pruner.js";
import type { Store } from "../store/index.js";
import { createPostgresStore } from "../store/postgres/index.js";
import { createSqliteStore } from "../store/sqlite/index.js";
import { isPostgresUrl, wholeNumber } from "./cli-arguments.js";
import { fail, messageOf, redactUrl } from "./fail.js";
import { formatRetention, RETENTION_ENV, retentionDuration, retentionSettings } from "./retention-settings.js";

interface PruneOptions {
  db: string;
  schema?: string;
  apply?: boolean;
  traceTtl?: number;
  runDetailTtl?: number;
  fragmentTtl?: number;
  operationTtl?: number;
  batchSize: number;
}

const SETTING_OF: Record<RetentionLayer, keyof RetentionSettings> = {
  traces: "traceTtlMs",
  run_detail: "runDetailTtlMs",
  fragments: "fragmentTtlMs",
  operations: "operationTtlMs",
};

const WHAT: Record<RetentionLayer, string> = {
  traces: "deleted",
  run_detail: "steps deleted; status and stats kept",
  fragments: "taken out of their thread; text cleared",
  operations: "reduced to a hashed key and the outcome; never deleted",
};

const HELP = `
Each layer's retention comes from its flag, else its environment variable
(${Object.values(RETENTION_ENV).join(", ")}: milliseconds or never), else the default
(traces, run detail and operations 30d; fragments never). The stream buffer and the PostgreSQL
event log are pruned by the server (TIDEMARK_EVENT_TTL_MS).
Exit codes: 0 done, 2 the store could not be opened.`;

/** Adds `prune` to `program`. */
export function addPruneCommand(program: Command): void {
  const ttl = (flag: string, what: string) => new Option(`${flag} <duration>`, `${what} (e.g. 30d, 12h, or never)`).argParser(retentionDuration(flag));
  program
    .command("prune")
    .description("expire each layer past its retention (docs/data/lifetimes.md); a dry run unless --apply")
    .requiredOption("--db <file|url>", "SQLite database file, or postgres://…")
    .option("--schema <name>", "PostgreSQL schema (or TIDEMARK_DB_SCHEMA)", process.env.TIDEMARK_DB_SCHEMA)
    .option("--apply", "prune (without it, only count)")
    .addOption(ttl("--trace-ttl", "keep traces this long"))
    .addOption(ttl("--run-detail-ttl", "keep a finished run's steps this long after its end"))
    .addOption(ttl("--fragment-ttl", "keep saved fragments this long"))
    .addOption(ttl("--operation-ttl", "keep an operation's full row this long after its last change"))
    .option("--batch-size <rows>", "rows per transaction", wholeNumber("--batch-size"), DEFAULT_PRUNE_BATCH_SIZE)
    .addHelpText("after", HELP)
    .action(prune);
}

async function prune(options: PruneOptions): Promise<void> {
  let settings: RetentionSettings;
  try {
    settings = retentionSettings(process.env, {
      traceTtlMs: options.traceTtl,
      runDetailTtlMs: options.runDetailTtl,
      fragmentTtlMs: options.fragmentTtl,
      operationTtlMs: options.operationTtl,
    });
  } catch (error) {
    fail(messageOf(error));
  }
  // Opened read-only first: a missing, foreign or outdated store is refused before anything is created or migrated.
  const reader = await open(options, true).catch((error: unknown) => fail(messageOf(error)));
  const now = systemClock.now();
  const cutoffs = retentionCutoffs(settings, now);
  let counts: Record<RetentionLayer, number | undefined>;
  try {
    counts = Object.fromEntries(
      await Promise.all(RETENTION_LAYERS.map(async (layer) => [layer, cutoffs.has(layer) ? await reader.countExpired(layer, cutoffs.get(layer)!) : undefined] as const)),
    ) as Record<RetentionLayer, number | undefined>;
  } catch (error) {
    fail(`The prune stopped: ${messageOf(error)}`);
  } finally {
    await reader.close();
  }
  if (!options.apply) {
    process.stdout.write(`${report(settings, counts, "expired")}\nDry run: nothing was changed. Run again with --apply to prune.\n`);
    return;
  }
  const store = await open(options, false).catch((error: unknown) => fail(messageOf(error)));
  try {
    const pruner = new RetentionPruner({ store, clock: { now: () => now }, timers: systemTimers, logger: silentLogger, settings, batchSize: options.batchSize });
    const pruned = await pruner.pruneOnce();
    process.stdout.write(`${report(settings, pruned, "pruned")}\n`);
  } catch (error) {
    fail(`The prune stopped: ${messageOf(error)}`);
  } finally {
    await store.close();
  }
}

/** One line per layer: its name, its count (or `-` when it is kept for ever), its retention and what expiry does. */
function report(settings: RetentionSettings, counts: Record<RetentionLayer, number | undefined>, verb: string): string {
  const lines = [`layer        ${verb.padEnd(8)} kept for  on expiry`];
  for (const layer of RETENTION_LAYERS) {
    const retention = settings[SETTING_OF[layer]];
    const count = Number.isFinite(retention) ? String(counts[layer] ?? 0) : "-";
    lines.push(`${layer.padEnd(12)} ${count.padEnd(8)} ${formatRetention(retention).padEnd(9)} ${WHAT[layer]}`);
  }
  return lines.join("\n");
}

async function open(options: PruneOptions, readOnly: boolean): Promise<Store> {
  if (!isPostgresUrl(options.db)) return createSqliteStore({ path: options.db, readOnly });
  return createPostgresStore({ url: options.db, schema: options.schema, readOnly }).catch((error: unknown) => {
    throw new ConfigurationError(`Cannot prune ${redactUrl(options.db)}: ${messageOf(error)}`, { setting: "--db", cause: error });
  });
}
