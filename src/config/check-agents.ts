import { AgentDefinitionError } from "../agents/agent-definition-error.js";
import { defineAgent, type Agent } from "../agents/define-agent.js";

/**
 * Checks agents about to be deployed, as the runtime will need them: each one's shape
 * (`defineAgent`'s checks, for an agent written without it) and one agent per name. Throws
 * `AgentDefinitionError`, so a deploy fails before anything is opened, not on the first run.
 */
export function checkAgents(agents: readonly Agent[]): void {
  const names = new Set<string>();
  for (const agent of agents) {
    defineAgent(agent);
    if (names.has(agent.name)) throw new AgentDefinitionError(agent.name, "two agents have this name");
    names.add(agent.name);
  }
}
