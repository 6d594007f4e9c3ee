import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Runtime } from "../../runtime/index.js";
import type { AppEnv } from "../app-env.js";
import type { ServerMetrics } from "../metrics.js";

const getHealth = createRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  tags: ["system"],
  summary: "Whether the process serves, its role, its active runs and its model",
  // Outside /v1: no API key.
  security: [],
  responses: {
    200: {
      description: "Serving",
      content: {
        "application/json": {
          schema: z.object({ status: z.literal("ok"), role: z.enum(["all", "api", "worker"]), active_runs: z.number().int(), model: z.string() }),
        },
      },
    },
  },
});

const getMetrics = createRoute({
  method: "get",
  path: "/metrics",
  operationId: "getMetrics",
  tags: ["system"],
  summary: "Prometheus metrics of this process",
  security: [],
  responses: { 200: { description: "Prometheus text format", content: { "text/plain": { schema: z.string() } } } },
});

/** `/healthz` and `/metrics` (Prometheus text); neither reveals tenant data. */
export function registerSystemRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime, metrics: ServerMetrics): void {
  app.openapi(getHealth, function healthz(c) {
    return c.json({ status: "ok" as const, role: runtime.role, active_runs: runtime.activeRunCount, model: runtime.model.id }, 200);
  });
  app.openapi(getMetrics, async function prometheusMetrics(c) {
    const text = await metrics.registry.metrics();
    return c.text(text, 200, { "content-type": metrics.registry.contentType });
  });
}
