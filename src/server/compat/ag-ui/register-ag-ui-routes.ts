import type { OpenAPIHono } from "@hono/zod-openapi";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { isTerminalStatus, TidemarkError, type RunRecord } from "../../../core/index.js";
import { runLogFields, silentLogger, type Logger, type Runtime } from "../../../runtime/index.js";
import type { AppEnv } from "../../app-env.js";
import { createAuthMiddleware } from "../../auth.js";
import { errorResponse } from "../../errors.js";
import { traceContextOf } from "../../trace-context.js";
import { jsonBodyGuard } from "../../json-body-guard.js";
import { isWellFormedId } from "../../path-id.js";
import { runView } from "../../wire.js";
import { createAgUiHistoryLookup } from "./ag-ui-history.js";
import { agUiRunIdOf } from "./ag-ui-run-id.js";
import { MAX_ID_LENGTH, parseAgUiInput } from "./ag-ui-input.js";
import { AgUiTranslator } from "./ag-ui-translator.js";
import { readJsonBody } from "./read-json-body.js";
import { agUiRunKey, resolveAgUiThread } from "./resolve-ag-ui-thread.js";
import { lastInterruptSeq } from "../resume-paused-run.js";
import { resumeAgUiRun } from "./resume-ag-ui-run.js";
import { streamAgUiEvents } from "./stream-ag-ui-events.js";
import { limitBody } from "../../limit-body.js";

/** Options the AG-UI layer takes from the server's options. */
export interface AgUiRouteOptions {
  apiKeys?: ReadonlyMap<string, string>;
  maxBodyBytes?: number;
  heartbeatMs?: number;
  logger?: Logger;
}

/** How long the explicit cancel waits for the run to be really terminal (`?wait=` ms, at most a minute). */
const DEFAULT_CANCEL_WAIT_MS = 30_000;

/**
 * AG-UI (`@ag-ui/client`'s `HttpAgent`) at `POST /ag-ui`: a `RunAgentInput` starts a native run
 * with `on_disconnect: "cancel"` (AG-UI's Stop is the client aborting its request) and answers
 * with its events as AG-UI SSE. `POST /ag-ui/runs/{run_id}/cancel` is the explicit Stop; it takes
 * the AG-UI `runId` or Tidemark's run id.
 */
export function registerAgUiRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime, options: AgUiRouteOptions): void {
  const logger = options.logger ?? silentLogger;
  for (const path of ["/ag-ui", "/ag-ui/*"]) {
    app.use(
      path,
      limitBody({
        maxSize: options.maxBodyBytes ?? 1024 * 1024,
        onError: (c) => {
          c.header("connection", "close");
          return errorResponse(c, "payload_too_large", "The request body is too large.");
        },
      }),
    );
    app.use(path, createAuthMiddleware(options.apiKeys ?? new Map()));
    app.use(path, jsonBodyGuard);
  }

  // The subscriptions of runs paused for an approval: kept, so that the closed stream does not
  // cancel them, until the AG-UI run that resumes them subscribes (in this process).
  const heldSubscribers = new Map<string, () => void>();

  app.post("/ag-ui", async function runAgUiAgent(c) {
    const tenantId = c.get("tenantId");
    const request = parseAgUiInput(await readJsonBody(c));
    const { thread, runKey: idempotencyKey } = await resolveAgUiThread(runtime, tenantId, request);
    let run: RunRecord;
    let afterSeq = 0;
    if (request.resume.length > 0) {
      run = await resumeAgUiRun(runtime, tenantId, thread, request.resume);
    } else {
      const savedAgent = (thread.metadata.ag_ui as { agent?: unknown } | undefined)?.agent;
      ({ run } = await runtime.startRun({
        tenantId,
        threadId: thread.threadId,
        input: { role: "user", content: request.content },
        // Named after the client's runId, so the explicit cancel finds it by either id.
        runId: agUiRunIdOf(request.runId),
        idempotencyKey,
        onDisconnect: "cancel",
        agent: request.agent ?? (typeof savedAgent === "string" ? savedAgent : undefined),
        config: request.config,
        traceContext: traceContextOf(c),
      }));
    }
    // Subscribed before anything else can wait: the disconnect grace runs only while nobody is.
    const subscriberKey = `${tenantId}\u0000${run.runId}`;
    const detach = runtime.attachSubscriber(tenantId, run.runId);
    heldSubscribers.get(subscriberKey)?.();
    heldSubscribers.delete(subscriberKey);
    try {
      const buffer = await runtime.openEvents(tenantId, run, 0);
      if (!buffer) throw new TidemarkError("stream_expired", "This run's event stream is no longer available; read the thread's history.");
      // A resumed run: what came before its interrupt was the previous AG-UI run's.
      if (request.resume.length > 0) afterSeq = lastInterruptSeq(buffer);
      const response = c.env.outgoing;
      response.setHeader("x-tidemark-run-id", run.runId);
      response.setHeader("x-tidemark-thread-id", run.threadId);
      const translator = new AgUiTranslator({
        threadId: request.threadId,
        runId: request.runId,
        clientState: request.state,
        history: createAgUiHistoryLookup(runtime, tenantId, run.threadId),
      });
      streamAgUiEvents(response, buffer, translator.started(run.runId, run.threadId), translator, {
        afterSeq,
        heartbeatMs: options.heartbeatMs,
        onClientClosed: detach,
        // A run waiting for an approval stays subscribed: it is not cancelled for the closed stream.
        onFinished: (isInterrupt) => (isInterrupt ? heldSubscribers.set(subscriberKey, detach) : detach()),
        onError: (error) => logger.error({ ...runLogFields(run), error: String(error) }, "the AG-UI stream failed"),
      });
    } catch (error) {
      detach();
      throw error;
    }
    return RESPONSE_ALREADY_SENT as never;
  });

  app.post("/ag-ui/runs/:run_id/cancel", async function cancelAgUiRun(c) {
    const tenantId = c.get("tenantId");
    const run = await findRun(runtime, tenantId, c.req.param("run_id"));
    const waitText = c.req.query("wait");
    const waitMs = waitText === undefined ? DEFAULT_CANCEL_WAIT_MS : Number(waitText);
    if (!Number.isInteger(waitMs) || waitMs < 0) throw new TidemarkError("invalid_request", "wait must be a number of milliseconds.");
    const result = await runtime.cancelRun(tenantId, run.runId, "user_requested");
    let current = result.kind === "pending_creation" ? run : result.run;
    if (waitMs > 0 && !isTerminalStatus(current.status)) {
      current = (await runtime.waitForTerminal(tenantId, run.runId, Math.min(waitMs, 60_000))) ?? current;
    }
    const isTerminal = isTerminalStatus(current.status);
    return c.json({ ...runView(current), already_terminal: result.kind === "already_terminal" }, isTerminal ? 200 : 202);
  });
}

/**
 * The run an explicit cancel names: by its Tidemark id (`RUN_STARTED.metadata.tidemark_run_id`,
 * or the `x-tidemark-run-id` header), or by the AG-UI `runId` of the request that started it (the
 * run id derived from it; for a run made before ids were derived, its idempotency key). Anything
 * else, or another tenant's run, names nothing (404).
 */
async function findRun(runtime: Runtime, tenantId: string, id: string): Promise<RunRecord> {
  // Longer than any id a request may carry, or with a NUL (which no store can look up): nothing.
  if (id.length > MAX_ID_LENGTH || id.includes("\u0000")) throw new TidemarkError("run_not_found", "No such run.");
  const run =
    (isWellFormedId(id, "run") ? await runtime.store.getRun(tenantId, id) : undefined) ??
    (await runtime.store.getRun(tenantId, agUiRunIdOf(id))) ??
    (await runtime.store.findRunByIdempotencyKey(tenantId, agUiRunKey(id)));
  if (!run) throw new TidemarkError("run_not_found", "No such run.");
  return run;
}
