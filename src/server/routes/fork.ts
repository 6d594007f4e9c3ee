import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { TidemarkError } from "../../core/index.js";
import type { Runtime } from "../../runtime/index.js";
import type { AppEnv } from "../app-env.js";
import { errorResponses, json, ThreadIdParam, ThreadSchema } from "../schemas.js";
import { historyUrl, threadView } from "../wire.js";

const ForkThreadBody = z
  .strictObject({
    from_checkpoint_id: z.string().min(1).max(100).openapi({
      description: "Any checkpoint of the thread's lineage (its own, or one it shares with the thread it was forked from).",
    }),
    metadata: z.record(z.string(), z.unknown()).optional().openapi({
      description: "The branch's metadata; `forked_from` is always set by the server.",
    }),
  })
  .openapi("ForkThreadRequest");

const ForkedThreadSchema = ThreadSchema.extend({ history_url: z.string() }).openapi("ForkedThread");

const forkThread = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/fork",
  operationId: "forkThread",
  tags: ["threads"],
  summary: "Start a branch from a checkpoint: it shares the history up to there without a copy",
  request: { params: ThreadIdParam, body: { content: json(ForkThreadBody), required: true } },
  responses: {
    201: { description: "The branch, idle, at the fork checkpoint's version + 1", content: json(ForkedThreadSchema) },
    ...errorResponses(400, 401, 404, 413, 415),
  },
});

/** `POST /v1/threads/{id}/fork` (DESIGN §9): a new branch thread; both paths stay valid. */
export function registerForkRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime): void {
  app.openapi(forkThread, async function forkThreadHandler(c) {
    const { thread_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const result = await runtime.forkThread({
      tenantId: c.get("tenantId"),
      sourceThreadId: thread_id,
      fromCheckpointId: body.from_checkpoint_id,
      metadata: body.metadata ?? {},
    });
    switch (result.kind) {
      case "forked":
        return c.json({ ...threadView(result.thread), history_url: historyUrl(result.thread.threadId) }, 201);
      case "thread_not_found":
        throw new TidemarkError("thread_not_found", "No such thread.");
      case "checkpoint_not_found":
        throw new TidemarkError("checkpoint_not_found", "No such checkpoint in this thread's lineage.");
    }
  });
}
