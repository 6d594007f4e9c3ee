/**
 * A Stop's fastest path (issue 18): `POST /v1/runs/{run_id}/cancel` stops a run executing in this
 * process as soon as the request's headers are read and its key names a tenant, before anything
 * else is done with the request (rate limit, body size, JSON, validation). The route then records
 * the cancel with the body's reason, as always; if the request ends without reaching it (its
 * body refused, a rate limit, the client gone), the cancel is recorded here with the default
 * reason: the work is already stopped, so the Stop stands (decision 005: abort, then record).
 */
import type { MiddlewareHandler } from "hono";
import type { Runtime } from "../runtime/index.js";
import type { AppEnv } from "./app-env.js";
import { bearerKey, createKeyLookup } from "./auth.js";
import { isWellFormedId } from "./path-id.js";

/** The cancel route's path, as Hono matches it. */
export const CANCEL_PATH = "/v1/runs/:run_id/cancel";

export function createStopAtRequest(runtime: Runtime, apiKeys: ReadonlyMap<string, string>): MiddlewareHandler<AppEnv> {
  const tenantOf = createKeyLookup(apiKeys);
  return async function stopAtRequest(c, next) {
    const runId = c.req.param("run_id") ?? "";
    const tenantId = c.req.method === "POST" && isWellFormedId(runId, "run") ? tenantOf(bearerKey(c.req.header("authorization"))) : undefined;
    if (tenantId === undefined || !runtime.stopAtRequest(tenantId, runId)) return next();
    try {
      await next();
    } finally {
      await runtime.recordStopAtRequest(tenantId, runId);
    }
  };
}
