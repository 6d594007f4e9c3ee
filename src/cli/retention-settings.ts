/** The retention settings (docs/data/lifetimes.md) as `serve` and `prune` read them: environment variables and flags. */
import { InvalidArgumentError } from "commander";
import { ConfigurationError, DEFAULT_RETENTION, type RetentionSettings } from "../core/index.js";
import { duration } from "./cli-arguments.js";

/** Each setting's environment variable: milliseconds, or `never` to keep the layer for ever. */
export const RETENTION_ENV: Record<keyof RetentionSettings, string> = {
  traceTtlMs: "TIDEMARK_TRACE_TTL_MS",
  runDetailTtlMs: "TIDEMARK_RUN_DETAIL_TTL_MS",
  fragmentTtlMs: "TIDEMARK_FRAGMENT_TTL_MS",
  operationTtlMs: "TIDEMARK_OPERATION_TTL_MS",
};

/** The settings the environment sets; a layer it leaves out keeps its default. */
export function retentionFromEnvironment(env: NodeJS.ProcessEnv): Partial<RetentionSettings> {
  const settings: Partial<RetentionSettings> = {};
  for (const [key, name] of Object.entries(RETENTION_ENV) as [keyof RetentionSettings, string][]) {
    const value = env[name]?.trim();
    if (!value) continue;
    if (value === "never") {
      settings[key] = Number.POSITIVE_INFINITY;
      continue;
    }
    const ms = Number(value);
    if (!Number.isFinite(ms) || ms < 0) throw new ConfigurationError(`${name} must be a number of milliseconds, or never.`, { setting: name });
    settings[key] = ms;
  }
  return settings;
}

/** A commander parser for a retention flag: a duration (`30d`, `12h`) or `never`. */
export function retentionDuration(name: string): (value: string) => number {
  const parse = duration(name);
  return (value) => {
    if (value.trim() === "never") return Number.POSITIVE_INFINITY;
    try {
      return parse(value);
    } catch {
      throw new InvalidArgumentError(`${name} must be a duration such as 12h or 30d, or never.`);
    }
  };
}

/** A retention as people read it: `30d`, `12h`, `90s`, or `never`. */
export function formatRetention(ms: number): string {
  if (!Number.isFinite(ms)) return "never";
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1_000]] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** The settings in force: the defaults, then the environment, then the flags. */
export function retentionSettings(env: NodeJS.ProcessEnv, flags: Partial<RetentionSettings> = {}): RetentionSettings {
  const defined = Object.fromEntries(Object.entries(flags).filter(([, value]) => value !== undefined));
  return { ...DEFAULT_RETENTION, ...retentionFromEnvironment(env), ...defined };
}
