import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { TidemarkError } from "../../core/index.js";
import type { Runtime } from "../../runtime/index.js";
import type { AppEnv } from "../app-env.js";
import {
  ConfirmOperationBody,
  DecisionBody,
  errorResponses,
  json,
  OperationParams,
  OperationSchema,
  RunIdParam,
  RunSchema,
  ThreadIdParam,
} from "../schemas.js";
import { operationView, runView } from "../wire.js";

const decide = (decision: "approve" | "reject") =>
  createRoute({
    method: "post",
    path: `/v1/runs/{run_id}/${decision}`,
    operationId: `${decision}Run`,
    tags: ["operations"],
    summary:
      decision === "approve"
        ? "Approve the consequential operation an interrupted run is waiting for"
        : "Reject it: the operation is abandoned, the run goes on without it",
    request: { params: RunIdParam, body: { content: json(DecisionBody), required: false } },
    responses: { 200: { description: "The run, running again", content: json(RunSchema) }, ...errorResponses(400, 401, 404, 409) },
  });

const listOperations = createRoute({
  method: "get",
  path: "/v1/threads/{thread_id}/operations",
  operationId: "listOperations",
  tags: ["operations"],
  summary: "The thread's external-operation log (the ledger)",
  request: { params: ThreadIdParam },
  responses: {
    200: { description: "Operations, oldest first", content: json(z.object({ thread_id: z.string(), operations: z.array(OperationSchema) })) },
    ...errorResponses(401, 404),
  },
});

const confirmOperation = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/operations/{op_id}/confirm",
  operationId: "confirmOperation",
  tags: ["operations"],
  summary: "Confirm what happened to an operation whose outcome is unknown",
  request: { params: OperationParams, body: { content: json(ConfirmOperationBody), required: true } },
  responses: { 200: { description: "The confirmed operation", content: json(OperationSchema) }, ...errorResponses(400, 401, 404, 409) },
});

/** Approval decisions and the operation ledger. */
export function registerOperationRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime): void {
  for (const decision of ["approve", "reject"] as const) {
    app.openapi(decide(decision), async function decideHandler(c) {
      const run = await runtime.decide(c.get("tenantId"), c.req.valid("param").run_id, decision === "approve" ? "approved" : "rejected");
      return c.json(runView(run), 200);
    });
  }

  app.openapi(listOperations, async function listOperationsHandler(c) {
    const tenantId = c.get("tenantId");
    const { thread_id } = c.req.valid("param");
    if (!(await runtime.store.getThread(tenantId, thread_id))) throw new TidemarkError("thread_not_found", "No such thread.");
    const operations = await runtime.store.listOperations(tenantId, thread_id);
    return c.json({ thread_id, operations: operations.map(operationView) }, 200);
  });

  app.openapi(confirmOperation, async function confirmOperationHandler(c) {
    const tenantId = c.get("tenantId");
    const { thread_id, op_id } = c.req.valid("param");
    const body = c.req.valid("json");
    if (!(await runtime.store.getThread(tenantId, thread_id))) throw new TidemarkError("thread_not_found", "No such thread.");
    const operation = await runtime.confirmOperation(tenantId, thread_id, op_id, body.outcome, body.result);
    return c.json(operationView(operation), 200);
  });
}
