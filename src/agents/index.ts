export { defineAgent } from "./define-agent.js";
export type {
  Agent,
  AgentDefinition,
  AgentRunContext,
  AgentStep,
  AgentTool,
  PublishedStep,
  StepGeneration,
  StepObject,
  CollectedResults,
  ResultSetUpdate,
  StepRunContext,
  StepToolOutcome,
} from "./define-agent.js";
export { AgentDefinitionError } from "./agent-definition-error.js";
export { AgentRegistry, type AgentDescription, type ParsedConfig } from "./agent-registry.js";
export { createChatAgent, type ChatAgentOptions } from "./chat-agent.js";
export { createResearchAgent, researchConfigSchema, subtasksFrom, type ResearchConfig } from "./research-agent.js";
export { builtInAgents, withBuiltInAgents } from "./built-in-agents.js";
