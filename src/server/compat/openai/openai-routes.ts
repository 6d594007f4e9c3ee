/**
 * OpenAI's Responses API (background mode) and model list under `/v1`, beside the native API and
 * mapped onto it: a response is a run (`response-id.ts`), a model is an agent, a conversation is a
 * thread, and cancel is Tidemark's Stop. No run logic lives here: every route starts, reads,
 * streams or cancels through the runtime, so every invariant holds through this layer.
 *
 * Registered before the shared `/v1/*` middleware, with its own chain (the same auth, body limit
 * and JSON guard); `createApp` wraps these paths in `openAiErrorShape` before anything else,
 * so each error of these paths, the rate limit's, the auth's and the body limit's included,
 * leaves in OpenAI's shape.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { Context } from "hono";
import { isTerminalStatus, TidemarkError, type RunRecord } from "../../../core/index.js";
import { runInBackground, runLogFields, silentLogger, type Logger, type Runtime } from "../../../runtime/index.js";
import { followEvents } from "../../../stream/index.js";
import type { AppEnv } from "../../app-env.js";
import { createAuthMiddleware } from "../../auth.js";
import { errorResponse } from "../../errors.js";
import { jsonBodyGuard } from "../../json-body-guard.js";
import { traceContextOf } from "../../trace-context.js";
import { runIdOf } from "./response-id.js";
import { parseResponseRequest, type ResponseRequest } from "./response-request.js";
import { toResponseStreamEvents } from "./response-stream-events.js";
import { writeResponseStream } from "./response-stream-writer.js";
import { responseView, type ResponseView } from "./response-view.js";
import { limitBody } from "../../limit-body.js";

/** The OpenAI layer's paths; `createApp` wraps them in `openAiErrorShape` before any other middleware. */
export const OPENAI_PATHS = ["/v1/models/*", "/v1/responses/*"] as const;

/** What the OpenAI routes take from the server's options. */
export interface OpenAiCompatOptions {
  runtime: Runtime;
  apiKeys?: ReadonlyMap<string, string>;
  maxBodyBytes?: number;
  heartbeatMs?: number;
  logger?: Logger;
}

/** How long a create without `background` (or a cancel) waits for the run to end before answering as it stands. */
const WAIT_FOR_END_MS = 10 * 60_000;
const WAIT_FOR_STOP_MS = 60_000;

/** The OpenAI-compatible routes: `GET /v1/models[/{model}]`, `POST /v1/responses`, `GET /v1/responses/{id}`, `POST /v1/responses/{id}/cancel`. */
export function registerOpenAiCompat(app: OpenAPIHono<AppEnv>, options: OpenAiCompatOptions): void {
  const { runtime } = options;
  const logger = options.logger ?? silentLogger;
  const limit = limitBody({
    maxSize: options.maxBodyBytes ?? 1024 * 1024,
    onError: (c) => {
      c.header("connection", "close");
      return errorResponse(c, "payload_too_large", "The request body is too large.");
    },
  });
  const authenticate = createAuthMiddleware(options.apiKeys ?? new Map());
  for (const path of OPENAI_PATHS) app.use(path, limit, authenticate, jsonBodyGuard);

  const requireRun = async (tenantId: string, responseId: string): Promise<RunRecord> => {
    const run = await runtime.store.getRun(tenantId, runIdOf(responseId));
    if (!run) throw new TidemarkError("run_not_found", `No response with id '${responseId}'.`, { details: { param: "response_id" } });
    return run;
  };
  const viewOf = async (run: RunRecord): Promise<ResponseView> => responseView(run, { messages: await runtime.store.listMessages(run.tenantId, run.threadId) });

  /** Streams the run as OpenAI events from its start (events up to `startingAfter` left out). */
  const streamResponse = async (c: Context<AppEnv>, run: RunRecord, startingAfter: number): Promise<Response> => {
    const buffer = await runtime.openEvents(run.tenantId, run, 0);
    // The numbering is derived from the run's events from its first: without them it cannot be kept.
    if (!buffer || buffer.firstSeq !== 1) {
      throw new TidemarkError("stream_expired", "This response's event stream is no longer available; retrieve the response instead.");
    }
    const messages = await runtime.store.listMessages(run.tenantId, run.threadId);
    const reading = new AbortController();
    const detach = runtime.attachSubscriber(run.tenantId, run.runId);
    const events = toResponseStreamEvents(followEvents(buffer, 0, reading.signal), {
      initial: (status) => responseView(run, { messages, status }),
      final: async () => viewOf((await runtime.waitForTerminal(run.tenantId, run.runId, WAIT_FOR_STOP_MS)) ?? run),
    });
    runInBackground(logger, "OpenAI response stream", async () => {
      try {
        await writeResponseStream(c.env.outgoing, skipUpTo(events, startingAfter), {
          heartbeatMs: options.heartbeatMs,
          onClientClosed: () => reading.abort(),
        });
      } finally {
        reading.abort();
        detach();
      }
    }, runLogFields(run));
    return RESPONSE_ALREADY_SENT as never;
  };

  app.get("/v1/models", function listModelsHandler(c) {
    return c.json({ object: "list", data: runtime.agents.list().map((agent) => modelView(agent.name)) }, 200);
  });

  app.get("/v1/models/:model", function getModelHandler(c) {
    const name = c.req.param("model");
    if (!runtime.agents.get(name)) throw modelNotFound(name);
    return c.json(modelView(name), 200);
  });

  app.post("/v1/responses", async function createResponseHandler(c) {
    const tenantId = c.get("tenantId");
    const request = parseResponseRequest(await readJson(c));
    if (!runtime.agents.get(request.model)) throw modelNotFound(request.model);
    const startResponse = async () => {
      const { threadId, expectedStateVersion } = await conversationOf(runtime, tenantId, request);
      return runtime.startRun({
        tenantId,
        threadId,
        input: { role: "user", content: request.content },
        agent: request.model,
        ...(request.instructions !== undefined ? { instructions: request.instructions } : {}),
        ...(request.metadata !== undefined ? { metadata: request.metadata } : {}),
        expectedStateVersion,
        // Without background, OpenAI's response ends with its request: so does the run (after the grace period).
        onDisconnect: request.isBackground ? "continue" : "cancel",
        traceContext: traceContextOf(c),
      });
    };
    let run: RunRecord;
    try {
      ({ run } = await startResponse());
    } catch (error) {
      // A turn slipped in after the thread was read: the previous response is no longer its
      // latest, so a second reading branches from it. Only once: a second conflict is the client's.
      const isConflict = TidemarkError.isInstance(error) && error.code === "state_version_conflict";
      if (request.previousResponseId === undefined || !isConflict) throw error;
      ({ run } = await startResponse());
    }
    if (request.isStream) return streamResponse(c, run, -1);
    if (request.isBackground) return c.json(await viewOf(run), 200);
    const detach = runtime.attachSubscriber(tenantId, run.runId);
    c.env.outgoing.once("close", detach);
    try {
      const ended = (await runtime.waitForTerminal(tenantId, run.runId, WAIT_FOR_END_MS)) ?? run;
      return c.json(await viewOf(ended), 200);
    } finally {
      detach();
    }
  });

  app.get("/v1/responses/:response_id", async function getResponseHandler(c) {
    const run = await requireRun(c.get("tenantId"), c.req.param("response_id"));
    if (c.req.query("stream") !== "true") return c.json(await viewOf(run), 200);
    const startingAfter = c.req.query("starting_after") ?? "-1";
    if (!/^-?\d{1,16}$/.test(startingAfter)) {
      throw new TidemarkError("invalid_request", "starting_after must be the sequence_number of an event of this response.", {
        details: { param: "starting_after" },
      });
    }
    return streamResponse(c, run, Number(startingAfter));
  });

  app.post("/v1/responses/:response_id/cancel", async function cancelResponseHandler(c) {
    const tenantId = c.get("tenantId");
    const run = await requireRun(tenantId, c.req.param("response_id"));
    // Tidemark's Stop; on a run that has ended it changes nothing, so a repeat answers the same object.
    await runtime.cancelRun(tenantId, run.runId, "user_requested");
    const ended = (await runtime.waitForTerminal(tenantId, run.runId, WAIT_FOR_STOP_MS)) ?? run;
    if (!isTerminalStatus(ended.status)) logger.warn({ ...runLogFields(run), status: ended.status }, "an OpenAI cancel answered before its run ended");
    return c.json(await viewOf(ended), 200);
  });
}

/** An OpenAI model object for an agent. */
function modelView(name: string) {
  return { id: name, object: "model" as const, created: 0, owned_by: "tidemark" };
}

function modelNotFound(name: string): TidemarkError {
  return new TidemarkError("agent_not_found", `The model '${name}' does not exist: models are the deployed agents (GET /v1/models).`, {
    details: { param: "model" },
  });
}

/** The request's JSON body; one that is not JSON is refused as the native routes refuse it. */
async function readJson(c: Context<AppEnv>): Promise<unknown> {
  const mediaType = (c.req.header("content-type") ?? "").split(";")[0]!.trim();
  if (!/^application\/([\w.-]+\+)?json$/i.test(mediaType)) throw new TidemarkError("unsupported_media_type", "Send the body as application/json.");
  try {
    return JSON.parse(await c.req.text()) as unknown;
  } catch {
    throw new TidemarkError("invalid_json", "The request body is not valid JSON.");
  }
}

/**
 * The thread a new response goes on. Without `previous_response_id`, a new thread. With it, the
 * conversation up to that response: its thread, continued from the head when it is that thread's
 * latest response (the version it was read at is enforced, so a turn that slipped in between is
 * refused, not built upon, and the caller reads again); else a branch forked at the checkpoint
 * where that response ended (its last transition), so the turns after it stay on their own
 * thread, unchanged (DESIGN §9).
 */
async function conversationOf(runtime: Runtime, tenantId: string, request: ResponseRequest): Promise<{ threadId: string; expectedStateVersion?: number }> {
  if (request.previousResponseId === undefined) return { threadId: (await runtime.createThread(tenantId)).threadId };
  const notFound = () =>
    new TidemarkError("run_not_found", `No response with id '${request.previousResponseId}'.`, { details: { param: "previous_response_id" } });
  const previous = await runtime.store.getRun(tenantId, runIdOf(request.previousResponseId));
  const thread = previous && (await runtime.store.getThread(tenantId, previous.threadId));
  if (!previous || !thread || thread.status === "deleted") throw notFound();
  const [last] = await runtime.store.listMessages(tenantId, thread.threadId, { limit: 1 });
  if (last?.runId === previous.runId || !isTerminalStatus(previous.status)) {
    return { threadId: thread.threadId, expectedStateVersion: thread.stateVersion };
  }
  const [endedAt] = (await runtime.store.listCheckpoints(tenantId, thread.threadId, { fromVersion: previous.stateVersion })).filter(
    (checkpoint) => checkpoint.stateVersion === previous.stateVersion,
  );
  if (!endedAt) throw notFound();
  const forked = await runtime.forkThread({
    tenantId,
    sourceThreadId: thread.threadId,
    fromCheckpointId: endedAt.checkpointId,
    metadata: { openai: { previous_response_id: request.previousResponseId } },
  });
  if (forked.kind !== "forked") throw notFound();
  return { threadId: forked.thread.threadId, expectedStateVersion: forked.thread.stateVersion };
}

/** `events` without those numbered up to `startingAfter`. */
async function* skipUpTo<T extends { sequence_number: number }>(events: AsyncIterable<T>, startingAfter: number): AsyncGenerator<T> {
  for await (const event of events) if (event.sequence_number > startingAfter) yield event;
}
