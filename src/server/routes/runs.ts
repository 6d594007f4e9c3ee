import { createRoute, z, type OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { acceptedCancelOf, isTerminalStatus, TidemarkError, type RunRecord, type ThreadRecord } from "../../core/index.js";
import { DEFAULT_CANCEL_REASON, type CancelRunResult, type Runtime } from "../../runtime/index.js";
import { streamRunEvents } from "../../stream/index.js";
import { traceContextOf } from "../trace-context.js";
import type { AppEnv } from "../app-env.js";
import type { ServerMetrics } from "../metrics.js";
import { isWellFormedId } from "../path-id.js";
import { acceptsEventStream } from "../accepts-event-stream.js";
import {
  CancelQuery,
  CancelRunBody,
  CancelRunResponse,
  CreateRunBody,
  CreateRunInNewThreadBody,
  errorResponses,
  json,
  EventsQuery,
  RunIdParam,
  RunSchema,
  RunStepsResponse,
  ThreadIdParam,
} from "../schemas.js";
import { eventsUrl, historyUrl, runView, stepView } from "../wire.js";

/** A response that is a run's events as SSE. */
const SSE_CONTENT = { "text/event-stream": { schema: z.string() } };

const createRun = createRoute({
  method: "post",
  path: "/v1/threads/{thread_id}/runs",
  operationId: "createRun",
  tags: ["runs"],
  summary: "Start a run: the input is published with its checkpoint at once",
  description:
    "With `Accept: text/event-stream` the reply is the run's events from its first (the SSE stream `GET /v1/runs/{run_id}/events` serves), so one exchange goes from the prompt to its stream; the run's events address is in `Location` before the first event.",
  request: {
    params: ThreadIdParam,
    headers: z.object({ "idempotency-key": z.string().min(1).max(200).optional() }),
    body: { content: json(CreateRunBody), required: true },
  },
  responses: {
    200: { description: "The same run, for a repeated run_id or Idempotency-Key", content: { ...json(RunSchema), ...SSE_CONTENT } },
    201: { description: "The new run; its events address is in Location", content: { ...json(RunSchema), ...SSE_CONTENT } },
    ...errorResponses(400, 401, 404, 409, 413, 415),
  },
});

const createRunInNewThread = createRoute({
  method: "post",
  path: "/v1/runs",
  operationId: "createRunInNewThread",
  tags: ["runs"],
  summary: "Start a run in a new thread: the thread, its first message and the run in one transaction",
  description:
    "The run's `thread_id` names the new thread. With `Accept: text/event-stream` the reply is the run's events from its first, so one exchange goes from a new conversation's prompt to its stream; the run's events address is in `Location` before the first event.",
  request: {
    headers: z.object({ "idempotency-key": z.string().min(1).max(200).optional() }),
    body: { content: json(CreateRunInNewThreadBody), required: true },
  },
  responses: {
    200: { description: "The same run, for a repeated run_id or Idempotency-Key (no second thread is made)", content: { ...json(RunSchema), ...SSE_CONTENT } },
    201: { description: "The new run in its new thread; its events address is in Location", content: { ...json(RunSchema), ...SSE_CONTENT } },
    ...errorResponses(400, 401, 404, 409, 413, 415),
  },
});

const getRun = createRoute({
  method: "get",
  path: "/v1/runs/{run_id}",
  operationId: "getRun",
  tags: ["runs"],
  summary: "The run's status model",
  request: { params: RunIdParam },
  responses: { 200: { description: "The run", content: json(RunSchema) }, ...errorResponses(401, 404) },
});

const getEvents = createRoute({
  method: "get",
  path: "/v1/runs/{run_id}/events",
  operationId: "streamRunEvents",
  tags: ["runs"],
  summary: "The run's events as SSE: replay after Last-Event-ID (or ?after=), then live, ending after the terminal event",
  request: { params: RunIdParam, query: EventsQuery, headers: z.object({ "last-event-id": z.string().optional() }) },
  responses: {
    200: { description: "An SSE stream", content: SSE_CONTENT },
    ...errorResponses(400, 401, 404, 410),
  },
});

const cancelRun = createRoute({
  method: "post",
  path: "/v1/runs/{run_id}/cancel",
  operationId: "cancelRun",
  tags: ["runs"],
  summary: "Stop a run (never refused for a stale version); ?wait= waits until it is truly terminal",
  request: { params: RunIdParam, query: CancelQuery, body: { content: json(CancelRunBody), required: false } },
  responses: {
    200: { description: "The run is terminal (already, or within ?wait=)", content: json(CancelRunResponse) },
    202: { description: "The cancel was accepted (or remembered for a run not created yet)", content: json(CancelRunResponse) },
    ...errorResponses(400, 401, 404, 413, 415),
  },
});

const getSteps = createRoute({
  method: "get",
  path: "/v1/runs/{run_id}/steps",
  operationId: "listRunSteps",
  tags: ["runs"],
  summary: "The run's steps and their statuses (DESIGN §11); live changes arrive as step.updated events",
  request: { params: RunIdParam },
  responses: { 200: { description: "The steps in the order they were planned", content: json(RunStepsResponse) }, ...errorResponses(401, 404, 410) },
});

/** The headers of an events stream (as `streamRunEvents` writes them), for a HEAD request. */
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform" };

/** Options the run routes take from the server's options. */
export interface RunRouteOptions {
  heartbeatMs?: number;
  maxBacklogEvents?: number;
  stallTimeoutMs?: number;
  /** How long a subscriber cut for being too slow may take to drain its last comment (default 5 s). */
  farewellTimeoutMs?: number;
}

/** A run id a client names must be read back by the rule a path's run id is read by. */
function checkNamedRunId(runId: string | undefined): void {
  if (runId !== undefined && !isWellFormedId(runId, "run")) {
    throw new TidemarkError("invalid_request", "run_id must be a run id such as run_01jd8x0f1ae2rbv7c9ks0d8m5q.");
  }
}

/** Run routes: create (in a thread, or with a new one), read, events, cancel. */
export function registerRunRoutes(app: OpenAPIHono<AppEnv>, runtime: Runtime, metrics: ServerMetrics, options: RunRouteOptions): void {
  const requireRun = async (tenantId: string, runId: string): Promise<RunRecord> => {
    const run = await runtime.store.getRun(tenantId, runId);
    if (!run) throw new TidemarkError("run_not_found", "No such run.");
    return run;
  };

  /**
   * Answers with the run's events as SSE after `afterSeq` (replay, then live), or with
   * `stream_expired` when the buffer is gone or does not hold that point.
   */
  const sendEvents = async (c: Context<AppEnv>, run: RunRecord, afterSeq: number, reply: { isHead?: boolean; status?: number; headers?: Record<string, string> }) => {
    const tenantId = c.get("tenantId");
    const buffer = await runtime.openEvents(tenantId, run, afterSeq);
    // The buffer is gone (expired, or lost with a restart), or does not hold the point the client
    // reached: an earlier attempt's stream, or one lost with its process.
    if (!buffer || (afterSeq > 0 && (afterSeq < buffer.firstSeq - 1 || afterSeq > buffer.lastSeq))) {
      throw new TidemarkError("stream_expired", "This run's event stream is no longer available; read the thread's history.", {
        details: { run_id: run.runId, history_url: historyUrl(run.threadId), run_status: run.status },
      });
    }
    if (reply.isHead) return c.body(null, 200, SSE_HEADERS) as never;
    streamRunEvents(c.env.outgoing, buffer, {
      afterSeq: Math.max(afterSeq, buffer.firstSeq - 1),
      status: reply.status,
      headers: reply.headers,
      heartbeatMs: options.heartbeatMs,
      maxBacklogEvents: options.maxBacklogEvents,
      stallTimeoutMs: options.stallTimeoutMs,
      farewellTimeoutMs: options.farewellTimeoutMs,
      onFramesWritten: (count) => metrics.eventsSent.inc(count),
      onSlowSubscriber: () => metrics.slowSubscribers.inc(),
      onClose: runtime.attachSubscriber(tenantId, run.runId),
    });
    return RESPONSE_ALREADY_SENT as never;
  };

  /**
   * A created run's reply: its status model as JSON, or with `Accept: text/event-stream` its
   * events from the first (one exchange from the prompt to its stream). 201 for a new run, 200
   * for a repeat; the events address is in `Location` either way.
   */
  const replyWithRun = (c: Context<AppEnv>, run: RunRecord, isNew: boolean) => {
    const status = isNew ? 201 : 200;
    if (acceptsEventStream(c.req.header("accept"))) return sendEvents(c, run, 0, { status, headers: { location: eventsUrl(run.runId) } });
    c.header("Location", eventsUrl(run.runId));
    return c.json(runView(run), status);
  };

  app.openapi(createRun, async function createRunHandler(c) {
    const body = c.req.valid("json");
    const { thread_id } = c.req.valid("param");
    const idempotencyKey = c.req.valid("header")["idempotency-key"];
    checkNamedRunId(body.run_id);
    const { run, isNew } = await runtime.startRun({
      tenantId: c.get("tenantId"),
      threadId: thread_id,
      input: body.input,
      runId: body.run_id,
      idempotencyKey,
      expectedStateVersion: body.expected_state_version,
      onDisconnect: body.on_disconnect,
      recoveryPolicy: body.recovery_policy,
      multitask: body.multitask,
      resumeFromCheckpointId: body.resume_from_checkpoint_id,
      agent: body.agent,
      config: body.config,
      traceContext: traceContextOf(c),
    });
    return replyWithRun(c, run, isNew);
  });

  app.openapi(createRunInNewThread, async function createRunInNewThreadHandler(c) {
    const body = c.req.valid("json");
    checkNamedRunId(body.run_id);
    const { run, isNew } = await runtime.startRunInNewThread(
      {
        tenantId: c.get("tenantId"),
        input: body.input,
        runId: body.run_id,
        idempotencyKey: c.req.valid("header")["idempotency-key"],
        onDisconnect: body.on_disconnect,
        recoveryPolicy: body.recovery_policy,
        agent: body.agent,
        config: body.config,
        traceContext: traceContextOf(c),
      },
      body.thread,
    );
    return replyWithRun(c, run, isNew);
  });

  app.openapi(getRun, async function getRunHandler(c) {
    const run = await requireRun(c.get("tenantId"), c.req.valid("param").run_id);
    return c.json(runView(run), 200);
  });

  app.openapi(getSteps, async function getStepsHandler(c) {
    const tenantId = c.get("tenantId");
    const run = await requireRun(tenantId, c.req.valid("param").run_id);
    // Expired detail answers as gone, never as an empty plan (docs/data/lifetimes.md).
    if (run.detailExpiredAt) {
      throw new TidemarkError("run_detail_expired", "This run's steps are no longer kept; its status is at the run's address, its messages in the thread's history.", {
        details: { history_url: historyUrl(run.threadId), run_status: run.status },
      });
    }
    const steps = await runtime.store.listRunSteps(tenantId, run.runId);
    return c.json({ run_id: run.runId, status: run.status, steps: steps.map(stepView) }, 200);
  });

  app.openapi(getEvents, async function getEventsHandler(c) {
    const tenantId = c.get("tenantId");
    const run = await requireRun(tenantId, c.req.valid("param").run_id);
    const afterText = c.req.valid("header")["last-event-id"] ?? c.req.valid("query").after ?? "0";
    if (!/^\d{1,16}$/.test(afterText.trim())) {
      throw new TidemarkError("invalid_request", "Last-Event-ID must be the seq of an event of this run.");
    }
    const afterSeq = Number(afterText.trim());
    // HEAD: what a GET would answer, without the stream (Hono routes HEAD to this GET route).
    return sendEvents(c, run, afterSeq, { isHead: c.req.method === "HEAD" });
  });

  app.openapi(cancelRun, async function cancelRunHandler(c) {
    const tenantId = c.get("tenantId");
    const { run_id } = c.req.valid("param");
    const body = c.req.valid("json");
    const waitMs = Math.min(Number(c.req.valid("query").wait ?? 0), 60_000);
    const result = await runtime.cancelRun(tenantId, run_id, body.reason ?? DEFAULT_CANCEL_REASON);
    if (result.kind === "pending_creation") {
      return c.json(
        {
          run_id,
          status: "cancel_requested" as const,
          already_terminal: false,
          pending_creation: true,
          accepted_state_version: null,
          resume_checkpoint_id: null,
          published_message_id: null,
        },
        202,
      );
    }
    let run = result.run;
    let waitTimedOut: boolean | undefined;
    if (waitMs > 0 && !isTerminalStatus(run.status)) {
      run = (await runtime.waitForTerminal(tenantId, run_id, waitMs)) ?? run;
      waitTimedOut = !isTerminalStatus(run.status);
    }
    // Too late or repeated: the client builds on the thread's current head.
    const thread = result.kind === "accepted" ? undefined : await runtime.store.getThread(tenantId, run.threadId);
    const body202 = cancelBody(result, run, thread);
    const isTerminalNow = isTerminalStatus(run.status) && (result.kind === "already_terminal" || waitMs > 0);
    return c.json({ ...body202, ...(waitTimedOut === undefined ? {} : { wait_timed_out: waitTimedOut }) }, isTerminalNow ? 200 : 202);
  });
}

function cancelBody(result: Exclude<CancelRunResult, { kind: "pending_creation" }>, run: RunRecord, thread: ThreadRecord | undefined) {
  const accepted = acceptedCancelOf(run);
  return {
    run_id: run.runId,
    status: run.status,
    already_terminal: result.kind === "already_terminal",
    pending_creation: false,
    // The version and checkpoint the client must build on now.
    accepted_state_version: thread?.stateVersion ?? accepted?.stateVersion ?? run.stateVersion,
    resume_checkpoint_id: thread?.headCheckpointId ?? accepted?.checkpointId ?? null,
    published_message_id: run.publishedMessageId,
  };
}
