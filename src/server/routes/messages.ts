import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import { TidemarkError } from "../../core/index.js";
import type { Runtime } from "../../runtime/index.js";
import type { AppEnv } from "../app-env.js";
import { pathId } from "../path-id.js";
import { errorResponses, json, MessageSchema, RunIdParam } from "../schemas.js";
import { historyUrl, messageView } from "../wire.js";

const SaveFragmentBody = z
  .strictObject({
    message_id: z.string().min(1).max(100).openapi({ description: "The streamed message (from its `message.delta` events)." }),
    last_seq: z.number().int().min(0).openapi({ description: "The seq of the last event the client received." }),
  })
  .openapi("SaveFragmentRequest");

const MessageParams = z.object({ thread_id: pathId("thr"), message_id: pathId("msg") });

const DeletedMessageSchema = z
  .object({
    message_id: z.string(),
    publication_status: z.literal("deleted"),
    state_version: z.number().int(),
    checkpoint_id: z.string(),
  })
  .openapi("DeletedMessage");

const saveFragment = createRoute({
  method: "post",
  path: "/v1/runs/{run_id}/fragments",
  operationId: "saveFragment",
  tags: ["messages"],
  summary: "Save what the client saw of a stopped answer, up to last_seq, as a labelled fragment",
  request: { params: RunIdParam, body: { content: json(SaveFragmentBody), required: true } },
  responses: {
    201: { description: "The saved fragment (publication_status: fragment)", content: json(MessageSchema) },
    ...errorResponses(400, 401, 404, 409, 410, 413, 415, 422),
  },
});

const deleteMessage = createRoute({
  method: "delete",
  path: "/v1/threads/{thread_id}/messages/{message_id}",
  operationId: "deleteMessage",
  tags: ["messages"],
  summary: "Delete a saved fragment: it becomes publication_status deleted, as a new version",
  request: { params: MessageParams },
  responses: {
    200: { description: "Deleted", content: json(DeletedMessageSchema) },
    ...errorResponses(401, 404, 409),
  },
});

/** Fragments (DESIGN §9): save what the user saw of a stopped answer; delete a saved one. */
export function registerMessageRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime): void {
  app.openapi(saveFragment, async function saveFragmentHandler(c) {
    const { message_id, last_seq } = c.req.valid("json");
    const result = await runtime.saveFragment({ tenantId: c.get("tenantId"), runId: c.req.valid("param").run_id, messageId: message_id, lastSeq: last_seq });
    switch (result.kind) {
      case "saved":
        return c.json(messageView(result.message), 201);
      case "run_not_found":
        throw new TidemarkError("run_not_found", "No such run.");
      case "thread_not_found":
        throw new TidemarkError("thread_not_found", "No such thread.");
      case "run_not_terminal":
        throw new TidemarkError("run_not_terminal", "The run has not ended; stop it first, then save what you saw.", {
          details: { status: result.run.status },
        });
      case "stream_expired":
        throw new TidemarkError("stream_expired", "This run's event stream is no longer available; read the thread's history.", {
          details: { history_url: historyUrl(result.run.threadId), run_status: result.run.status },
        });
      case "fragment_out_of_range":
        throw new TidemarkError("fragment_out_of_range", "The stream holds no text of this message at or before last_seq.", {
          details: { last_streamed_seq: result.lastSeq, first_streamed_seq: result.firstSeq },
        });
      case "run_in_progress":
        throw new TidemarkError("run_in_progress", "Another run of this thread is active; save the fragment once it has ended.", {
          details: { active_run_id: result.thread.activeRunId, current_state_version: result.thread.stateVersion },
        });
      case "thread_moved_on":
        throw new TidemarkError("thread_moved_on", "The thread has moved on since this run; its fragment can no longer be saved.", {
          details: { current_state_version: result.thread.stateVersion },
        });
      case "exists": {
        const { message } = result;
        if (message.publicationStatus === "published") {
          throw new TidemarkError("message_already_published", "This message was published; read it in the thread's history.", {
            details: { message_id: message.messageId },
          });
        }
        // One fragment per message: a repeat learns what was saved instead of overwriting it.
        throw new TidemarkError("fragment_already_saved", "A fragment of this message was already saved.", {
          details: {
            message_id: message.messageId,
            publication_status: message.publicationStatus,
            ...(message.publicationStatus === "fragment" ? { fragment: messageView(message) } : {}),
          },
        });
      }
    }
  });

  app.openapi(deleteMessage, async function deleteMessageHandler(c) {
    const { thread_id, message_id } = c.req.valid("param");
    const result = await runtime.deleteMessage(c.get("tenantId"), thread_id, message_id);
    switch (result.kind) {
      case "deleted":
        return c.json(
          {
            message_id: result.message.messageId,
            publication_status: "deleted" as const,
            state_version: result.thread.stateVersion,
            checkpoint_id: result.checkpoint.checkpointId,
          },
          200,
        );
      case "thread_not_found":
        throw new TidemarkError("thread_not_found", "No such thread.");
      case "message_not_found":
        throw new TidemarkError("message_not_found", "No such message in this thread.");
      case "not_deletable":
        throw new TidemarkError("message_not_deletable", "Only a saved fragment can be deleted; this message is published.", {
          details: { publication_status: result.message.publicationStatus },
        });
    }
  });
}
