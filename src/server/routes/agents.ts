import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import type { Runtime } from "../../runtime/index.js";
import type { AppEnv } from "../app-env.js";
import { AgentListResponse, errorResponses, json } from "../schemas.js";
import { agentView } from "../wire.js";

const listAgents = createRoute({
  method: "get",
  path: "/v1/agents",
  operationId: "listAgents",
  tags: ["agents"],
  summary: "The deployed agents a run may name, with each one's config JSON Schema",
  responses: { 200: { description: "The agents", content: json(AgentListResponse) }, ...errorResponses(401) },
});

/** `GET /v1/agents`: what `agent` and `config` of a run may be (DESIGN §11). */
export function registerAgentRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime): void {
  app.openapi(listAgents, function listAgentsHandler(c) {
    return c.json({ agents: runtime.agents.list().map(agentView) }, 200);
  });
}
