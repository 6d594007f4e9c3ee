/** `POST /assistants/search` and `GET /assistants/{id}`: the deployed agents, each an assistant named after it. */
import type { Hono } from "hono";
import type { Runtime } from "../../../runtime/index.js";
import type { AppEnv } from "../../app-env.js";
import { LangGraphError } from "./langgraph-error.js";
import { AssistantSearchBody } from "./langgraph-schemas.js";
import { langGraphAssistant } from "./langgraph-views.js";
import { readJsonBody } from "./read-json-body.js";

/** Registers the assistant routes on the `/langgraph` app. */
export function registerLangGraphAssistantRoutes(app: Hono<AppEnv>, runtime: Runtime): void {
  // Agents are part of the deployment and keep no creation time: the epoch stands for "always".
  const deployedAt = 0;

  app.post("/assistants/search", async function searchLangGraphAssistants(c) {
    const body = await readJsonBody(c, AssistantSearchBody);
    const matching = runtime.agents
      .list()
      .filter((agent) => (body.graph_id ?? agent.name) === agent.name && (body.name ?? agent.name) === agent.name);
    const offset = body.offset ?? 0;
    const limit = body.limit ?? 10;
    if (offset + limit < matching.length) c.header("X-Pagination-Next", String(offset + limit));
    return c.json(matching.slice(offset, offset + limit).map((agent) => langGraphAssistant(agent, deployedAt)), 200);
  });

  app.get("/assistants/:assistant_id", function getLangGraphAssistant(c) {
    const agent = runtime.agents.get(c.req.param("assistant_id"));
    if (!agent) throw new LangGraphError(404, "agent_not_found", "No agent of that name is deployed.");
    return c.json(langGraphAssistant(runtime.agents.describe(agent), deployedAt), 200);
  });
}
