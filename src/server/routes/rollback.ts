import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { RUN_STATUSES } from "../../core/index.js";
import type { Runtime } from "../../runtime/index.js";
import type { AppEnv } from "../app-env.js";
import { CancelQuery, errorResponses, json, RunIdParam } from "../schemas.js";

const RollbackRunResponse = z
  .object({
    run_id: z.string(),
    thread_id: z.string(),
    status: z.enum(RUN_STATUSES),
    rolled_back_message_id: z.string(),
    already_rolled_back: z.boolean(),
    state_version: z.number().int(),
    checkpoint_id: z.string(),
  })
  .openapi("RollbackRunResponse");

const rollbackRun = createRoute({
  method: "post",
  path: "/v1/runs/{run_id}/rollback",
  operationId: "rollbackRun",
  tags: ["runs"],
  summary: "Stop the run and take its turn back: its input leaves the history, as a new version (a repeat answers the same)",
  request: { params: RunIdParam, query: CancelQuery },
  responses: {
    200: { description: "Rolled back (now, or before: already_rolled_back)", content: json(RollbackRunResponse) },
    ...errorResponses(400, 401, 404, 409),
  },
});

/** Rollback (docs/decisions/012): Stop, wait until the run is terminal, then take its input back. */
export function registerRollbackRoute(app: OpenAPIHono<AppEnv>, runtime: Runtime): void {
  app.openapi(rollbackRun, async function rollbackRunHandler(c) {
    const { run_id } = c.req.valid("param");
    const waitMs = Math.min(Number(c.req.valid("query").wait ?? 30_000), 60_000);
    const outcome = await runtime.rollBackRun({ tenantId: c.get("tenantId"), runId: run_id, reason: "user_requested", waitMs });
    return c.json(
      {
        run_id: outcome.run.runId,
        thread_id: outcome.run.threadId,
        status: outcome.run.status,
        rolled_back_message_id: outcome.message.messageId,
        already_rolled_back: outcome.isRepeat,
        state_version: outcome.checkpoint.stateVersion,
        checkpoint_id: outcome.checkpoint.checkpointId,
      },
      200,
    );
  });
}
