/**
 * A Stop's fastest path (issue 18): `POST /v1/runs/{run_id}/cancel` stops a run executing in this
 * process as soon as the request's headers are read and its key names a tenant, before anything
 * else is done with the request (the app's request conversion and routing, rate limit, body size,
 * JSON, validation). The route then records the cancel with the body's reason, as always; if the
 * request ends without reaching it (its body refused, a rate limit, the client gone), the cancel
 * is recorded here with the default reason: the work is already stopped, so the Stop stands
 * (decision 005: abort, then record).
 *
 * Two entrances, one rule: the HTTP server's `request` listener (`createStopAtHeaders`), which
 * runs before the app sees the request, and the app's middleware (`createStopAtRequest`), which
 * records what the listener stopped and stops by itself when the app runs without that server
 * (`app.request` in tests, another adapter).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { MiddlewareHandler } from "hono";
import type { Logger, Runtime } from "../runtime/index.js";
import type { AppEnv } from "./app-env.js";
import { bearerKey, createKeyLookup } from "./auth.js";
import { isWellFormedId } from "./path-id.js";

/** The cancel route's path, as Hono matches it. */
export const CANCEL_PATH = "/v1/runs/:run_id/cancel";

/** The same path in a raw request target (the query, if any, after it). */
const CANCEL_TARGET = /^\/v1\/runs\/([^/?#]+)\/cancel(?:\?|$)/;

/** A Stop begun at a request's headers: whose run it stopped, for the route to record. */
interface BegunStop {
  tenantId: string;
  runId: string;
}

/** Requests whose run the server's listener stopped, until the app records the cancel. */
const stoppedAtHeaders = new WeakMap<IncomingMessage, BegunStop>();

/** The run this request would stop and its tenant, or undefined (not a cancel, an ill-formed id, no tenant). */
function stopTarget(tenantOf: (key: string | undefined) => string | undefined, method: string | undefined, runId: string, authorization: string | undefined): BegunStop | undefined {
  if (method !== "POST" || !isWellFormedId(runId, "run")) return undefined;
  const tenantId = tenantOf(bearerKey(authorization));
  return tenantId === undefined ? undefined : { tenantId, runId };
}

/**
 * The server's `request` listener, to run before the app's: a cancel stops its run here, at its
 * headers. Should the app never record it (the request gone before its route), the response's end
 * does, so that a stopped run is never left unrecorded.
 */
export function createStopAtHeaders(runtime: Runtime, apiKeys: ReadonlyMap<string, string>, logger: Logger): (request: IncomingMessage, response: ServerResponse) => void {
  const tenantOf = createKeyLookup(apiKeys);
  // Outside the app, nothing would catch a throw here but the process: a failure is logged, and
  // the request goes on to the app, whose route records the cancel as for any other.
  const stopsHere = (target: BegunStop): boolean => {
    try {
      return runtime.stopAtRequest(target.tenantId, target.runId);
    } catch (error) {
      logger.error({ run_id: target.runId, error: String(error) }, "a Stop could not be taken at its request's headers");
      return false;
    }
  };
  return function stopAtHeaders(request, response) {
    const runId = CANCEL_TARGET.exec(request.url ?? "")?.[1];
    const target = runId === undefined ? undefined : stopTarget(tenantOf, request.method, runId, request.headers.authorization);
    if (!target || !stopsHere(target)) return;
    stoppedAtHeaders.set(request, target);
    response.once("close", () => {
      runtime.recordStopAtRequest(target.tenantId, target.runId).catch((error: unknown) => {
        logger.error({ run_id: target.runId, error: String(error) }, "a Stop begun at its request's headers could not be recorded");
      });
    });
  };
}

/** The app's half: records a Stop begun at the headers, or begins one when no listener ran. */
export function createStopAtRequest(runtime: Runtime, apiKeys: ReadonlyMap<string, string>): MiddlewareHandler<AppEnv> {
  const tenantOf = createKeyLookup(apiKeys);
  return async function stopAtRequest(c, next) {
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    let begun = incoming === undefined ? undefined : stoppedAtHeaders.get(incoming);
    if (!begun) {
      const target = stopTarget(tenantOf, c.req.method, c.req.param("run_id") ?? "", c.req.header("authorization"));
      if (!target || !runtime.stopAtRequest(target.tenantId, target.runId)) return next();
      begun = target;
    }
    try {
      await next();
    } finally {
      await runtime.recordStopAtRequest(begun.tenantId, begun.runId);
    }
  };
}
