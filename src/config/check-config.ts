import { ConfigurationError, type Redactor, type RetentionSettings } from "../core/index.js";
import type { Agent } from "../agents/define-agent.js";
import type { Tool } from "../tools/tool.js";
import { checkAgents } from "./check-agents.js";
import type { TidemarkConfig } from "./define-config.js";

const KEYS = new Set(["agents", "tools", "redactor", "retention"]);
const RETENTION_KEYS = new Set<string>(["traceTtlMs", "runDetailTtlMs", "fragmentTtlMs", "operationTtlMs"]);
const EFFECTS = new Set(["none", "idempotent", "consequential"]);

/**
 * Checks a config file's default export and returns it typed. Throws a `ConfigurationError` (or,
 * for an agent, an `AgentDefinitionError`) whose message names the problem in one line, without
 * the file's name: the caller says which file.
 */
export function checkConfig(exported: unknown): TidemarkConfig {
  if (!isObject(exported) || Array.isArray(exported)) throw invalid(`its default export is ${describe(exported)}, not { agents: [...] }`);
  const unknown = Object.keys(exported).find((key) => !KEYS.has(key));
  if (unknown !== undefined) throw invalid(`"${unknown}" is not a config setting (a config holds agents, tools, a redactor and retention)`);
  const { agents, tools, redactor, retention } = exported as { agents?: unknown; tools?: unknown; redactor?: unknown; retention?: unknown };
  if (!Array.isArray(agents)) throw invalid(`agents must be an array of agents (defineAgent), not ${describe(agents)}`);
  agents.forEach((agent, index) => {
    if (!isObject(agent)) throw invalid(`agents[${index}] is ${describe(agent)}, not an agent (defineAgent)`);
  });
  checkAgents(agents as Agent[]);
  if (tools !== undefined) checkTools(tools);
  if (redactor !== undefined && typeof redactor !== "function") throw invalid(`redactor must be a function (text) => text, not ${describe(redactor)}`);
  if (retention !== undefined) checkRetention(retention);
  return {
    agents: agents as Agent[],
    ...(tools === undefined ? {} : { tools: tools as Tool[] }),
    ...(redactor === undefined ? {} : { redactor: redactor as Redactor }),
    ...(retention === undefined ? {} : { retention: retention as Partial<RetentionSettings> }),
  };
}

/** Retention: known layers only, each a number of milliseconds of at least 0 (or Infinity). */
function checkRetention(retention: unknown): void {
  if (!isObject(retention) || Array.isArray(retention)) throw invalid(`retention must be an object such as { traceTtlMs: 604800000 }, not ${describe(retention)}`);
  for (const [key, value] of Object.entries(retention)) {
    if (!RETENTION_KEYS.has(key)) throw invalid(`retention.${key} is not a retention setting (${[...RETENTION_KEYS].join(", ")})`);
    if (typeof value !== "number" || Number.isNaN(value) || value < 0) throw invalid(`retention.${key} must be a number of milliseconds of at least 0, or Infinity`);
  }
}

/** Tools as the runtime uses them: a name, a description, a zod input, an effect and its functions. */
function checkTools(tools: unknown): void {
  if (!Array.isArray(tools)) throw invalid(`tools must be an array of tools (defineTool), not ${describe(tools)}`);
  const names = new Set<string>();
  tools.forEach((tool: unknown, index) => {
    if (!isObject(tool)) throw invalid(`tools[${index}] is ${describe(tool)}, not a tool (defineTool)`);
    const { name, description, input, effect } = tool as Partial<Record<keyof Tool, unknown>>;
    if (typeof name !== "string" || name.length === 0) throw invalid(`tools[${index}] has no name`);
    const problem = (what: string) => invalid(`tool "${name}": ${what}`);
    if (typeof description !== "string") throw problem("needs a description");
    if (!isObject(input) || typeof (input as { safeParse?: unknown }).safeParse !== "function") throw problem("input must be a zod schema");
    if (typeof effect !== "string" || !EFFECTS.has(effect)) throw problem("effect must be none, idempotent or consequential");
    const functions = effect === "consequential" ? ["idempotencyKey", "commit"] : ["execute"];
    const missing = functions.find((key) => typeof (tool as Record<string, unknown>)[key] !== "function");
    if (missing !== undefined) throw problem(`a tool whose effect is ${effect} needs ${missing}()`);
    if (effect === "consequential" && !["required", "never"].includes((tool as { approval?: unknown }).approval as string)) {
      throw problem("approval must be required or never");
    }
    if (names.has(name)) throw invalid(`two tools are named "${name}"`);
    names.add(name);
  });
}

function invalid(message: string): ConfigurationError {
  return new ConfigurationError(message, { setting: "config" });
}

function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null;
}

/** A value's kind, for a message: never the value itself (it may be large, or hold a secret). */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : typeof value === "undefined" ? "undefined" : `a ${typeof value}`;
}
