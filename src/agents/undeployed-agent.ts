import { AgentDefinitionError } from "./agent-definition-error.js";
import { defineAgent, type Agent } from "./define-agent.js";

/**
 * What executes a run whose agent this process does not deploy (a worker started without the
 * config file the API process had): one step that fails, saying why, so the run fails honestly
 * instead of running another agent's logic.
 */
export function undeployedAgent(name: string): Agent {
  return defineAgent({
    name: "undeployed",
    steps: () => [
      {
        id: "agent",
        run: () => Promise.reject(new AgentDefinitionError(name, "this agent is not deployed on the process that executes the run")),
      },
    ],
  });
}
