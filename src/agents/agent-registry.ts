import { z } from "zod";
import { AgentDefinitionError } from "./agent-definition-error.js";
import type { Agent } from "./define-agent.js";

/** What `GET /v1/agents` says about one agent. */
export interface AgentDescription {
  name: string;
  description: string | null;
  /** The config's JSON Schema; `{}` for an agent that takes no config. */
  configSchema: Record<string, unknown>;
}

/** A run's config as its agent's schema parsed it, or the schema's complaints. */
export type ParsedConfig = { ok: true; config: unknown } | { ok: false; issues: { path: string; message: string }[] };

/** The agents a server deploys, by name; the first registered is not special, `chat` is the default. */
export class AgentRegistry {
  readonly #agents = new Map<string, Agent>();
  readonly #descriptions = new Map<string, AgentDescription>();

  constructor(agents: readonly Agent[]) {
    for (const agent of agents) {
      if (this.#agents.has(agent.name)) throw new AgentDefinitionError(agent.name, "two agents have this name");
      this.#agents.set(agent.name, agent);
    }
  }

  /** The agent named `name`, if deployed. */
  get(name: string): Agent | undefined {
    return this.#agents.get(name);
  }

  /** Every agent, in registration order. */
  list(): AgentDescription[] {
    return [...this.#agents.values()].map((agent) => this.describe(agent));
  }

  describe(agent: Agent): AgentDescription {
    let description = this.#descriptions.get(agent.name);
    if (!description) {
      description = { name: agent.name, description: agent.description ?? null, configSchema: jsonSchemaOf(agent) };
      this.#descriptions.set(agent.name, description);
    }
    return description;
  }

  /** Validates `config` (absent: `{}`) against `agent`'s schema. */
  parseConfig(agent: Agent, config: unknown): ParsedConfig {
    if (!agent.configSchema) {
      return config === undefined || isEmptyObject(config)
        ? { ok: true, config: {} }
        : { ok: false, issues: [{ path: "", message: `the agent "${agent.name}" takes no config` }] };
    }
    const parsed = agent.configSchema.safeParse(config ?? {});
    if (parsed.success) return { ok: true, config: parsed.data };
    return { ok: false, issues: parsed.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message })) };
  }
}

function jsonSchemaOf(agent: Agent): Record<string, unknown> {
  if (!agent.configSchema) return {};
  try {
    // What a client sends (a field with a default is optional), not what the schema parses it into.
    return z.toJSONSchema(agent.configSchema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  } catch {
    // A schema JSON Schema cannot express (a transform, say) still validates; it is described as "any".
    return {};
  }
}

function isEmptyObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}
