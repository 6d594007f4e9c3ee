import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Runtime } from "../../runtime/index.js";
import type { AppEnv } from "../app-env.js";
import type { ServerMetrics } from "../metrics.js";

/** `/healthz` and `/metrics` (Prometheus text); neither reveals tenant data. */
export function registerSystemRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime, metrics: ServerMetrics): void {
  app.get("/healthz", function healthz(c) {
    return c.json({ status: "ok", role: runtime.role, active_runs: runtime.activeRunCount, model: runtime.model.id });
  });
  app.get("/metrics", async function prometheusMetrics(c) {
    const text = await metrics.registry.metrics();
    return c.text(text, 200, { "content-type": metrics.registry.contentType });
  });
}
