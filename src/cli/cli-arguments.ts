/** Parsers for the CLI's arguments and environment settings: each names the setting it refuses, never echoing its value. */
import { InvalidArgumentError } from "commander";
import { ConfigurationError } from "../core/index.js";

/** A commander parser for a whole number. */
export function wholeNumber(name: string): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`${name} must be a whole number.`);
    return Number(value);
  };
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 };

/** A commander parser for a duration such as `90s`, `10m`, `2h` or `1d`, in milliseconds. */
export function duration(name: string): (value: string) => number {
  return (value) => {
    const match = /^(\d+)(ms|s|m|min|h|d)$/.exec(value.trim());
    if (!match) throw new InvalidArgumentError(`${name} must be a duration such as 90s, 10m, 2h or 1d.`);
    return Number(match[1]) * UNIT_MS[match[2]!]!;
  };
}

/** A setting that must be a number of at least 0; undefined when it is unset or empty. */
export function environmentNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = env[name]?.trim();
  if (!value) return undefined;
  const number = Number(value);
  if (!Number.isFinite(number) || number < 0) throw new ConfigurationError(`${name} must be a number of at least 0.`, { setting: name });
  return number;
}

/** Whether `--db` names PostgreSQL rather than a SQLite file. */
export function isPostgresUrl(db: string): boolean {
  return /^postgres(ql)?:\/\//.test(db);
}
