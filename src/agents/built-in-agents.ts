import { createChatAgent } from "./chat-agent.js";
import type { Agent } from "./define-agent.js";
import { createResearchAgent } from "./research-agent.js";

/** The agents every server deploys: `chat` (the default) and `research` (a plan). */
export function builtInAgents(): Agent[] {
  return [createChatAgent(), createResearchAgent()];
}

/** The built-in agents followed by `agents`; an agent of the same name replaces the built-in one. */
export function withBuiltInAgents(agents: readonly Agent[] = []): Agent[] {
  const names = new Set(agents.map((agent) => agent.name));
  return [...builtInAgents().filter((agent) => !names.has(agent.name)), ...agents];
}
