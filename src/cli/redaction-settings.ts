/**
 * The server's redactor, from two settings (docs/data/redaction.md):
 * - `TIDEMARK_REDACT`: `default` (unset: emails and card numbers), `off` (no built-in rule), or
 *   the built-in rules to apply, comma-separated (`email`, `card`);
 * - `TIDEMARK_REDACT_PATTERNS`: a JSON array of regular expressions (`"ACME-\\d{6}"`, or
 *   `"/acme-\\d{6}/i"` with flags), each match replaced by `[redacted]`, whatever `TIDEMARK_REDACT` says.
 */
import { ConfigurationError, createRedactor, REDACTION_RULES, type RedactionRule, type Redactor } from "../core/index.js";

const RULE_NAMES: ReadonlySet<string> = new Set(REDACTION_RULES);

/** The redactor `env` asks for; a setting that cannot work is a `ConfigurationError` naming it (never echoing its value). */
export function redactorFromEnvironment(env: NodeJS.ProcessEnv): Redactor {
  return createRedactor({ rules: rulesOf(env.TIDEMARK_REDACT), patterns: patternsOf(env.TIDEMARK_REDACT_PATTERNS) });
}

function rulesOf(setting: string | undefined): readonly RedactionRule[] {
  const value = setting?.trim().toLowerCase();
  if (!value || value === "default") return REDACTION_RULES;
  if (value === "off") return [];
  const names = value.split(",").map((name) => name.trim());
  if (!names.every((name) => RULE_NAMES.has(name))) {
    throw new ConfigurationError(`TIDEMARK_REDACT must be default, off, or a comma-separated list of ${REDACTION_RULES.join(", ")}.`, { setting: "TIDEMARK_REDACT" });
  }
  return names as RedactionRule[];
}

function patternsOf(setting: string | undefined): RegExp[] {
  const value = setting?.trim();
  if (!value) return [];
  const refuse = (why: string, cause?: unknown) =>
    new ConfigurationError(`TIDEMARK_REDACT_PATTERNS must be a JSON array of regular expressions (${why}).`, { setting: "TIDEMARK_REDACT_PATTERNS", cause });
  let sources: unknown;
  try {
    sources = JSON.parse(value);
  } catch (error) {
    throw refuse("it is not JSON", error);
  }
  if (!Array.isArray(sources) || !sources.every((source) => typeof source === "string" && source.length > 0)) throw refuse("each a non-empty string");
  return sources.map((source: string, index) => {
    const literal = /^\/(.+)\/([a-z]*)$/s.exec(source);
    try {
      return literal ? new RegExp(literal[1]!, literal[2]!.includes("g") ? literal[2] : `${literal[2]}g`) : new RegExp(source, "g");
    } catch (error) {
      throw refuse(`entry ${index + 1} is not a valid regular expression`, error);
    }
  });
}
