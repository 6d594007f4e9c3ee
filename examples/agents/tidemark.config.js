// Deployed with `tidemark serve --config examples/agents/tidemark.config.js` (or `npm start --
// --config …`). Every process of a deployment, API and worker alike, loads the same file.
import { compareAgent } from "./compare-agent.js";

/** @type {import("tidemark").TidemarkConfig} */
export default {
  agents: [compareAgent],
};
