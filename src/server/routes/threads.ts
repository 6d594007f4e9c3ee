import { createRoute, type OpenAPIHono } from "@hono/zod-openapi";
import { TidemarkError } from "../../core/index.js";
import type { Runtime } from "../../runtime/index.js";
import type { AppEnv } from "../app-env.js";
import {
  CheckpointSchema,
  CreateThreadBody,
  RenameThreadBody,
  errorResponses,
  json,
  MessageSchema,
  HistoryMarkerSchema,
  HistoryQuery,
  ListThreadsQuery,
  OperationSchema,
  THREAD_PAGE_DEFAULT,
  ThreadIdParam,
  ThreadListSchema,
  ThreadSchema,
} from "../schemas.js";
import { decodeThreadCursor, encodeThreadCursor } from "../thread-cursor.js";
import { z } from "@hono/zod-openapi";
import { checkpointView, historyMarkers, messageView, operationView, threadView } from "../wire.js";
import { registerForkRoutes } from "./fork.js";

const createThread = createRoute({
  method: "post",
  path: "/v1/threads",
  operationId: "createThread",
  tags: ["threads"],
  summary: "Create a thread",
  request: { body: { content: json(CreateThreadBody), required: false } },
  responses: { 201: { description: "The new thread", content: json(ThreadSchema) }, ...errorResponses(400, 401, 413, 415) },
});

const listThreads = createRoute({
  method: "get",
  path: "/v1/threads",
  operationId: "listThreads",
  tags: ["threads"],
  summary: "The tenant's threads, most recently updated first, a page at a time",
  request: { query: ListThreadsQuery },
  responses: { 200: { description: "A page of threads", content: json(ThreadListSchema) }, ...errorResponses(400, 401) },
});

const getThread = createRoute({
  method: "get",
  path: "/v1/threads/{thread_id}",
  operationId: "getThread",
  tags: ["threads"],
  summary: "A thread's status, version, statistics and title",
  request: { params: ThreadIdParam },
  responses: { 200: { description: "The thread", content: json(ThreadSchema) }, ...errorResponses(401, 404) },
});

const renameThread = createRoute({
  method: "patch",
  path: "/v1/threads/{thread_id}",
  operationId: "renameThread",
  tags: ["threads"],
  summary: "Rename a thread (not a transition: the version stays)",
  request: { params: ThreadIdParam, body: { content: json(RenameThreadBody), required: true } },
  responses: { 200: { description: "The renamed thread", content: json(ThreadSchema) }, ...errorResponses(400, 401, 404, 413, 415) },
});

const deleteThread = createRoute({
  method: "delete",
  path: "/v1/threads/{thread_id}",
  operationId: "deleteThread",
  tags: ["threads"],
  summary: "Terminate a thread: cancel every run of it and delete it; with ?erase=true, erase its text (docs/data/lifetimes.md)",
  request: {
    params: ThreadIdParam,
    query: z.object({
      erase: z
        .enum(["true", "false"])
        .optional()
        .openapi({ description: "Erase the thread (a terminated one too): its messages, checkpoints, fragments, traces, events and tool inputs and results go; its runs must have ended." }),
    }),
  },
  responses: {
    200: {
      description: "Deleted; or erased (a repeat answers the same)",
      content: json(
        z.union([
          z.object({ thread_id: z.string(), status: z.literal("deleted"), cancelled_run_ids: z.array(z.string()) }),
          z.object({ thread_id: z.string(), status: z.literal("erased"), state_version: z.number().int(), erased_at: z.string() }),
        ]),
      ),
    },
    ...errorResponses(400, 401, 404, 409),
  },
});

const getHistory = createRoute({
  method: "get",
  path: "/v1/threads/{thread_id}/history",
  operationId: "getThreadHistory",
  tags: ["threads"],
  summary: "The visible result: published messages in order (a branch's shared prefix included)",
  request: { params: ThreadIdParam, query: HistoryQuery },
  responses: {
    200: {
      description: "History",
      content: json(
        z.object({
          thread_id: z.string(),
          state_version: z.number().int(),
          head_checkpoint_id: z.string(),
          messages: z.array(MessageSchema),
          has_earlier: z.boolean().openapi({ description: "With `limit`: messages before this page exist." }),
          operations: z.array(OperationSchema),
          markers: z.array(HistoryMarkerSchema),
        }),
      ),
    },
    ...errorResponses(400, 401, 404),
  },
});

const getCheckpoints = createRoute({
  method: "get",
  path: "/v1/threads/{thread_id}/checkpoints",
  operationId: "listThreadCheckpoints",
  tags: ["threads"],
  summary: "The checkpoint chain, oldest first",
  request: { params: ThreadIdParam },
  responses: {
    200: {
      description: "Checkpoints",
      content: json(z.object({ thread_id: z.string(), state_version: z.number().int(), checkpoints: z.array(CheckpointSchema) })),
    },
    ...errorResponses(401, 404),
  },
});

/** Thread routes: create, list, read, terminate, history, checkpoints, fork. */
export function registerThreadRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime): void {
  const requireThread = async (tenantId: string, threadId: string) => {
    const thread = await runtime.store.getThread(tenantId, threadId);
    if (!thread) throw new TidemarkError("thread_not_found", "No such thread.");
    return thread;
  };

  app.openapi(createThread, async function createThreadHandler(c) {
    const body = c.req.valid("json");
    const thread = await runtime.createThread(c.get("tenantId"), { metadata: body.metadata, title: body.title });
    return c.json(threadView(thread), 201);
  });

  app.openapi(listThreads, async function listThreadsHandler(c) {
    const query = c.req.valid("query");
    const limit = query.limit === undefined ? THREAD_PAGE_DEFAULT : Number(query.limit);
    const before = query.before === undefined ? undefined : decodeThreadCursor(query.before);
    // The schema already refused a cursor that does not decode; never read such a one as "the first page".
    if (query.before !== undefined && !before) {
      const message = "is not a cursor from next_cursor";
      throw new TidemarkError("invalid_request", `The request is not valid: before: ${message}`, { details: { issues: [{ path: "before", message }] } });
    }
    // One more than the page tells whether another page follows, so the last page says so itself.
    const found = await runtime.store.listThreads(c.get("tenantId"), { limit: limit + 1, before });
    const page = found.slice(0, limit);
    const last = page.at(-1);
    return c.json(
      { threads: page.map(threadView), next_cursor: found.length > limit && last ? encodeThreadCursor(last) : null },
      200,
    );
  });

  app.openapi(getThread, async function getThreadHandler(c) {
    const thread = await requireThread(c.get("tenantId"), c.req.valid("param").thread_id);
    return c.json(threadView(thread), 200);
  });

  app.openapi(renameThread, async function renameThreadHandler(c) {
    const thread = await runtime.renameThread(c.get("tenantId"), c.req.valid("param").thread_id, c.req.valid("json").title);
    if (!thread) throw new TidemarkError("thread_not_found", "No such thread.");
    return c.json(threadView(thread), 200);
  });

  app.openapi(deleteThread, async function deleteThreadHandler(c) {
    const { thread_id } = c.req.valid("param");
    if (c.req.valid("query").erase === "true") {
      const erased = await runtime.eraseThread(c.get("tenantId"), thread_id);
      switch (erased.kind) {
        case "thread_not_found":
          throw new TidemarkError("thread_not_found", "No such thread.");
        case "run_in_progress":
          throw new TidemarkError("run_in_progress", "A run of this thread has not ended: stop it (or DELETE the thread without erase, which stops every run), then erase.", {
            details: { active_run_ids: erased.runs.map((run) => run.runId) },
          });
        case "has_branches":
          throw new TidemarkError("thread_has_branches", "Branches of this thread read its history through it; erase them first.", {
            details: { branch_ids: erased.branchIds },
          });
        default: {
          const { thread } = erased;
          return c.json({ thread_id, status: "erased" as const, state_version: thread.stateVersion, erased_at: new Date(thread.updatedAt).toISOString() }, 200);
        }
      }
    }
    const result = await runtime.terminateThread(c.get("tenantId"), thread_id);
    if (!result) throw new TidemarkError("thread_not_found", "No such thread.");
    return c.json({ thread_id, status: "deleted" as const, cancelled_run_ids: result.cancelledRunIds }, 200);
  });

  app.openapi(getHistory, async function getHistoryHandler(c) {
    const tenantId = c.get("tenantId");
    const thread = await requireThread(tenantId, c.req.valid("param").thread_id);
    const { limit } = c.req.valid("query");
    const messages = await runtime.store.listMessages(tenantId, thread.threadId, limit === undefined ? {} : { limit: Number(limit) });
    const operations = await runtime.store.listOperations(tenantId, thread.threadId);
    // A page's markers are those of its own span of versions, so its cost follows the page, not the thread.
    const fromVersion = limit === undefined ? 0 : (messages[0]?.stateVersion ?? thread.stateVersion);
    const checkpoints = await runtime.store.listCheckpoints(tenantId, thread.threadId, { fromVersion });
    return c.json(
      {
        thread_id: thread.threadId,
        state_version: thread.stateVersion,
        head_checkpoint_id: thread.headCheckpointId,
        messages: messages.filter((message) => message.publicationStatus !== "deleted").map(messageView),
        has_earlier: (messages[0]?.position ?? 0) > 0,
        // Each tool call's outcome as the ledger knows it, including one a Stop left without a result message.
        operations: operations.map(operationView),
        markers: historyMarkers(thread.threadId, messages, checkpoints, operations),
      },
      200,
    );
  });

  app.openapi(getCheckpoints, async function getCheckpointsHandler(c) {
    const tenantId = c.get("tenantId");
    const thread = await requireThread(tenantId, c.req.valid("param").thread_id);
    const checkpoints = await runtime.store.listCheckpoints(tenantId, thread.threadId);
    return c.json({ thread_id: thread.threadId, state_version: thread.stateVersion, checkpoints: checkpoints.map(checkpointView) }, 200);
  });

  registerForkRoutes(app, runtime);
}
