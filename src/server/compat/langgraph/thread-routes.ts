/** `POST /threads`, `GET /threads/{t}`, `GET /threads/{t}/state`, `POST /threads/{t}/history`. */
import type { Hono } from "hono";
import type { ThreadRecord } from "../../../core/index.js";
import type { Runtime } from "../../../runtime/index.js";
import type { AppEnv } from "../../app-env.js";
import { isWellFormedId } from "../../path-id.js";
import { LangGraphError } from "./langgraph-error.js";
import { pathIdOf } from "./langgraph-ids.js";
import { HistoryBody, ThreadCreateBody } from "./langgraph-schemas.js";
import { deletionVersions, langGraphState, langGraphThread } from "./langgraph-views.js";
import { readJsonBody } from "./read-json-body.js";

/** Registers the thread routes on the `/langgraph` app. */
export function registerLangGraphThreadRoutes(app: Hono<AppEnv>, runtime: Runtime): void {
  const requireThread = async (tenantId: string, threadId: string): Promise<ThreadRecord> => {
    const thread = await runtime.store.getThread(tenantId, threadId);
    if (!thread) throw new LangGraphError(404, "thread_not_found", "No such thread.");
    return thread;
  };

  const threadResponse = async (tenantId: string, thread: ThreadRecord) => {
    const messages = await runtime.store.listMessages(tenantId, thread.threadId);
    const activeRun = thread.activeRunId === null ? undefined : await runtime.store.getRun(tenantId, thread.activeRunId);
    return langGraphThread(thread, messages, activeRun);
  };

  app.post("/threads", async function createLangGraphThread(c) {
    const tenantId = c.get("tenantId");
    const body = await readJsonBody(c, ThreadCreateBody);
    if (body.thread_id !== undefined && body.thread_id !== null) {
      // Tidemark names its threads; a client's own id can only name one that exists.
      const existing = isWellFormedId(body.thread_id, "thr") ? await runtime.store.getThread(tenantId, body.thread_id) : undefined;
      if (!existing) throw new LangGraphError(422, "unsupported", "thread_id: Tidemark names new threads itself; leave thread_id out.");
      if (body.if_exists !== "do_nothing") throw new LangGraphError(409, "thread_exists", "A thread with this id exists (send if_exists: do_nothing to get it).");
      return c.json(await threadResponse(tenantId, existing), 200);
    }
    const thread = await runtime.createThread(tenantId, { metadata: body.metadata ?? {} });
    return c.json(await threadResponse(tenantId, thread), 200);
  });

  app.get("/threads/:thread_id", async function getLangGraphThread(c) {
    const tenantId = c.get("tenantId");
    const thread = await requireThread(tenantId, pathIdOf(c, "thread_id", "thr"));
    return c.json(await threadResponse(tenantId, thread), 200);
  });

  app.get("/threads/:thread_id/state", async function getLangGraphThreadState(c) {
    const tenantId = c.get("tenantId");
    const thread = await requireThread(tenantId, pathIdOf(c, "thread_id", "thr"));
    const [head] = (await runtime.store.listCheckpoints(tenantId, thread.threadId, { fromVersion: thread.stateVersion })).filter(
      (checkpoint) => checkpoint.checkpointId === thread.headCheckpointId,
    );
    if (!head) throw new LangGraphError(404, "checkpoint_not_found", "The thread's latest checkpoint is not readable.");
    const messages = await runtime.store.listMessages(tenantId, thread.threadId);
    return c.json(langGraphState(thread.threadId, head, messages), 200);
  });

  app.post("/threads/:thread_id/history", async function getLangGraphThreadHistory(c) {
    const tenantId = c.get("tenantId");
    const thread = await requireThread(tenantId, pathIdOf(c, "thread_id", "thr"));
    const body = await readJsonBody(c, HistoryBody);
    const before = typeof body.before === "string" ? body.before : (body.before?.configurable?.checkpoint_id ?? undefined);
    const checkpoints = (await runtime.store.listCheckpoints(tenantId, thread.threadId)).reverse();
    const start = before === undefined ? 0 : checkpoints.findIndex((checkpoint) => checkpoint.checkpointId === before) + 1;
    if (start === 0 && before !== undefined) throw new LangGraphError(404, "checkpoint_not_found", "before names no checkpoint of this thread.");
    const messages = await runtime.store.listMessages(tenantId, thread.threadId);
    const page = checkpoints.slice(start, start + (body.limit ?? 10));
    const deletedAt = deletionVersions(checkpoints);
    return c.json(page.map((checkpoint) => langGraphState(thread.threadId, checkpoint, messages, deletedAt)), 200);
  });
}
