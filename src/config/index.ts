export { defineConfig, type TidemarkConfig } from "./define-config.js";
export { checkConfig } from "./check-config.js";
export { checkAgents } from "./check-agents.js";
