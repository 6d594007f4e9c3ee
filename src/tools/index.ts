export { defineTool, type Tool, type ReadTool, type ConsequentialTool, type ToolContext, type ToolEffect, type OperationStatus } from "./tool.js";
export { createDemoTools, DEMO_TOOL_NAMES, type DemoToolsOptions } from "./demo-tools.js";
export { createDemoOutbox, type DemoOutbox, type DemoOutboxOptions } from "./demo-outbox.js";
