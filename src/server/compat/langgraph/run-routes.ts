/**
 * The run routes of the Agent Server subset: create (plain, streamed, waited), read, join, join
 * the stream, cancel. Each maps onto the runtime's own start, cancel, wait and event buffer.
 */
import type { Context, Hono } from "hono";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { isTerminalStatus, type RunRecord } from "../../../core/index.js";
import { runInBackground, runLogFields, type Logger, type Runtime } from "../../../runtime/index.js";
import type { AppEnv } from "../../app-env.js";
import { lastInterruptSeq } from "../resume-paused-run.js";
import { LangGraphError } from "./langgraph-error.js";
import { parseLastEventId, type StreamCursor } from "./langgraph-frames.js";
import { pathIdOf, runPath } from "./langgraph-ids.js";
import { RunCreateBody, type StreamMode } from "./langgraph-schemas.js";
import { streamLangGraphRun } from "./langgraph-stream.js";
import { langGraphRun, threadValues } from "./langgraph-views.js";
import { readJsonBody } from "./read-json-body.js";
import { startLangGraphRun } from "./start-langgraph-run.js";
import { streamModesOf, streamModesOfQuery } from "./stream-modes.js";
import { waitForRun } from "./wait-for-run.js";
import { traceContextOf } from "../../trace-context.js";

/** What the run routes need besides the runtime. */
export interface LangGraphRunRouteOptions {
  logger: Logger;
  heartbeatMs?: number;
}

/** How long `?wait=1` on a cancel waits for the run to be terminal. */
const CANCEL_WAIT_MS = 60_000;

/** Registers the run routes on the `/langgraph` app. */
export function registerLangGraphRunRoutes(app: Hono<AppEnv>, runtime: Runtime, options: LangGraphRunRouteOptions): void {
  const requireRun = async (c: Context<AppEnv>): Promise<RunRecord> => {
    const threadId = pathIdOf(c, "thread_id", "thr");
    const run = await runtime.store.getRun(c.get("tenantId"), pathIdOf(c, "run_id", "run"));
    // A run of another thread is not found under this one.
    if (!run || run.threadId !== threadId) throw new LangGraphError(404, "run_not_found", "No such run on this thread.");
    return run;
  };

  /** The thread's values now, with the run's failure as the Agent Server reports one. */
  const finalValues = async (run: RunRecord) => {
    const values = threadValues(await runtime.store.listMessages(run.tenantId, run.threadId));
    if (run.status !== "failed") return values;
    return { ...values, __error__: { error: run.failureReason ?? "error", message: run.failureMessage ?? "The run failed." } };
  };

  const openStream = async (c: Context<AppEnv>, run: RunRecord, stream: { cursor: StreamCursor; modes: ReadonlySet<StreamMode>; headers: Record<string, string>; onClose?: (reachedEnd: boolean) => void }) => {
    const tenantId = c.get("tenantId");
    const buffer = await runtime.openEvents(tenantId, run, stream.cursor.seq);
    const { seq } = stream.cursor;
    if (!buffer || (seq > 0 && (seq < buffer.firstSeq - 1 || seq > buffer.lastSeq))) {
      throw new LangGraphError(410, "stream_expired", "This run's stream is no longer available; read the thread's state.");
    }
    const cursor = seq < buffer.firstSeq - 1 ? { seq: buffer.firstSeq - 1, index: Number.POSITIVE_INFINITY } : stream.cursor;
    streamLangGraphRun(c.env.outgoing, { runtime, logger: options.logger, tenantId, run, buffer, cursor, modes: stream.modes, headers: stream.headers, heartbeatMs: options.heartbeatMs, onClose: stream.onClose });
    return RESPONSE_ALREADY_SENT;
  };

  app.post("/threads/:thread_id/runs", async function createLangGraphRun(c) {
    const body = await readJsonBody(c, RunCreateBody);
    const { run } = await startLangGraphRun(runtime, c.get("tenantId"), pathIdOf(c, "thread_id", "thr"), body, traceContextOf(c));
    c.header("Content-Location", runPath(run.threadId, run.runId));
    return c.json(langGraphRun(run, body.multitask_strategy ?? null), 200);
  });

  app.post("/threads/:thread_id/runs/stream", async function streamLangGraphRunHandler(c) {
    const body = await readJsonBody(c, RunCreateBody);
    const tenantId = c.get("tenantId");
    const { run, isResume } = await startLangGraphRun(runtime, tenantId, pathIdOf(c, "thread_id", "thr"), body, traceContextOf(c));
    const path = runPath(run.threadId, run.runId);
    // The SDK reconnects (with Last-Event-ID) only when Location is present, and puts its apiUrl before it.
    const headers: Record<string, string> = { "Content-Location": path, ...(body.stream_resumable ? { Location: `${path}/stream` } : {}) };
    // A resumed run: what came before its pause was the previous LangGraph run's stream.
    const buffer = isResume ? await runtime.openEvents(tenantId, run, 0) : undefined;
    const seq = buffer ? lastInterruptSeq(buffer) : 0;
    return openStream(c, run, { cursor: { seq, index: Number.POSITIVE_INFINITY }, modes: streamModesOf(body.stream_mode), headers });
  });

  app.post("/threads/:thread_id/runs/wait", async function waitLangGraphRun(c) {
    const tenantId = c.get("tenantId");
    const body = await readJsonBody(c, RunCreateBody);
    const { run } = await startLangGraphRun(runtime, tenantId, pathIdOf(c, "thread_id", "thr"), body, traceContextOf(c));
    // While the client waits it is the run's subscriber: with on_disconnect "cancel", leaving cancels the run.
    const detach = runtime.attachSubscriber(tenantId, run.runId);
    try {
      const ended = await waitForRun(runtime, run, c.req.raw.signal);
      c.header("Content-Location", runPath(run.threadId, run.runId));
      return c.json(await finalValues(ended), 200);
    } finally {
      detach();
    }
  });

  app.get("/threads/:thread_id/runs/:run_id", async function getLangGraphRun(c) {
    return c.json(langGraphRun(await requireRun(c)), 200);
  });

  app.get("/threads/:thread_id/runs/:run_id/join", async function joinLangGraphRun(c) {
    const run = await requireRun(c);
    const ended = await waitForRun(runtime, run, c.req.raw.signal);
    return c.json(await finalValues(ended), 200);
  });

  app.get("/threads/:thread_id/runs/:run_id/stream", async function joinLangGraphRunStream(c) {
    const tenantId = c.get("tenantId");
    const run = await requireRun(c);
    const lastEventId = c.req.header("last-event-id");
    // Without Last-Event-ID a join is live only; "-1" replays from the start.
    let cursor: StreamCursor | undefined = { seq: Number.POSITIVE_INFINITY, index: Number.POSITIVE_INFINITY };
    if (lastEventId !== undefined) cursor = parseLastEventId(lastEventId);
    if (!cursor) throw new LangGraphError(422, "invalid_request", "Last-Event-ID must be -1 or the id of an event of this run.");
    if (!Number.isFinite(cursor.seq)) {
      const buffer = await runtime.openEvents(tenantId, run, 0);
      cursor = { seq: buffer?.lastSeq ?? 0, index: Number.POSITIVE_INFINITY };
    }
    const cancelOnDisconnect = ["1", "true"].includes(c.req.query("cancel_on_disconnect") ?? "");
    const modes = streamModesOfQuery(c.req.queries("stream_mode") ?? []);
    return openStream(c, run, {
      cursor,
      modes,
      headers: { "Content-Location": runPath(run.threadId, run.runId) },
      onClose: (reachedEnd) => {
        if (cancelOnDisconnect && !reachedEnd) runInBackground(options.logger, "cancel_on_disconnect", () => runtime.cancelRun(tenantId, run.runId, "client_disconnected"), runLogFields(run));
      },
    });
  });

  app.post("/threads/:thread_id/runs/:run_id/cancel", async function cancelLangGraphRun(c) {
    const tenantId = c.get("tenantId");
    const action = c.req.query("action") ?? "interrupt";
    if (action !== "interrupt" && action !== "rollback") throw new LangGraphError(422, "invalid_request", 'action must be "interrupt" or "rollback".');
    const wait = c.req.query("wait") ?? "0";
    if (!["0", "1", "true", "false"].includes(wait)) throw new LangGraphError(422, "invalid_request", "wait must be 0, 1, true or false.");
    const run = await requireRun(c);
    if (action === "rollback") {
      // Stop, wait until the run is terminal (whatever `wait` says: only then can its input go), take the input back.
      const { run: rolledBack } = await runtime.rollBackRun({ tenantId, runId: run.runId, reason: "user_requested", waitMs: CANCEL_WAIT_MS });
      return c.json(langGraphRun(rolledBack), 200);
    }
    const result = await runtime.cancelRun(tenantId, run.runId, "user_requested");
    let current = result.kind === "pending_creation" ? run : result.run;
    if (wait === "1" || wait === "true") current = await waitForRun(runtime, current, c.req.raw.signal, CANCEL_WAIT_MS);
    return c.json(langGraphRun(current), isTerminalStatus(current.status) ? 200 : 202);
  });
}
