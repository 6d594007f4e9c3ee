/**
 * Tidemark: a runtime and server for AI agent runs whose Stop, disconnect and resume are honest.
 *
 * @example
 * import { startTidemark } from "tidemark";
 * const tidemark = await startTidemark({ dbPath: "./tidemark.db" });
 */
export { startTidemark, type Tidemark, type TidemarkOptions } from "./start-tidemark.js";
export * from "./core/index.js";
export type * from "./store/index.js";
export { createSqliteStore } from "./store/sqlite/index.js";
export { createRuntime, Runtime, createDemoModel } from "./runtime/index.js";
export {
  CancelRequestedError,
  ModelFailedError,
  PublicationRejectedError,
  PlanDefinitionError,
  RunNotRunningError,
  ShieldTimeoutError,
  StructuredOutputError,
  NotUsableForExecutionError,
} from "./runtime/index.js";
export { StoreInvariantError, StoreSchemaError, type StoreInvariant, type StoreSchemaProblem } from "./store/index.js";
export type { ChatModel, ModelStreamPart, RuntimeOptions } from "./runtime/index.js";
export { selectModel, fromAISDKModel, createOpenAICompatibleModel, withRetries, withIdleTimeout } from "./models/index.js";
export type { ProviderCancelOptions, OpenAICompatibleModelOptions, AISDKModelOptions } from "./models/index.js";
export { createApp, startServer, createServerMetrics, parseApiKeys } from "./server/index.js";
export { checkStore, formatCheckReport } from "./check/index.js";
export { defineTool, createDemoTools, createDemoOutbox } from "./tools/index.js";
export { defineAgent, AgentDefinitionError, createChatAgent, createResearchAgent } from "./agents/index.js";
export { defineConfig, type TidemarkConfig } from "./config/index.js";
export {
  LiveBridge,
  LiveEvent,
  LiveInterruption,
  UserStartedSpeaking,
  UserStoppedSpeaking,
  EmergencyStop,
  AgentHandoff,
  DEFAULT_INTERRUPTION,
  type LiveEventClass,
  type LiveSink,
  type LiveTurn,
  type LiveChunk,
  type Generate,
  type InterruptionOptions,
  type InterruptReason,
} from "./live/index.js";
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
  ChatAgentOptions,
  ResearchConfig,
} from "./agents/index.js";
export type { Tool, ReadTool, ConsequentialTool, ToolContext, ToolEffect } from "./tools/index.js";
