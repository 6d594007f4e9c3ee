import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../../app-env.js";
import { bearerKey, createKeyLookup } from "../../auth.js";
import { langGraphErrorResponse } from "./langgraph-error.js";

/**
 * The tenant, as the native API selects it (`Authorization: Bearer <key>`), or from `x-api-key`,
 * where the LangGraph SDK puts its `apiKey` option; Bearer wins when both are sent.
 */
export function createLangGraphAuth(apiKeys: ReadonlyMap<string, string>): MiddlewareHandler<AppEnv> {
  const tenantOf = createKeyLookup(apiKeys);
  return async function authenticateLangGraph(c, next) {
    const tenant = tenantOf(bearerKey(c.req.header("authorization")) ?? c.req.header("x-api-key")?.trim());
    if (!tenant) return langGraphErrorResponse(c, 401, "unauthorized", "Send a valid API key as Authorization: Bearer <key>.");
    c.set("tenantId", tenant);
    return next();
  };
}
