import type { MiddlewareHandler } from "hono";
import { timingSafeEqual } from "node:crypto";
import { errorResponse } from "./errors.js";
import type { AppEnv } from "./app-env.js";

/** The tenant served when no API keys are configured (local, loopback-only use). */
export const LOCAL_TENANT = "local";

/** Parses `TIDEMARK_API_KEYS=key:tenant,key2:tenant2` into key → tenant. */
export function parseApiKeys(value: string | undefined): Map<string, string> {
  const keys = new Map<string, string>();
  for (const entry of (value ?? "").split(",").map((part) => part.trim()).filter(Boolean)) {
    const separator = entry.lastIndexOf(":");
    const key = entry.slice(0, separator).trim();
    const tenant = entry.slice(separator + 1).trim();
    if (separator <= 0 || !key || !tenant) throw new Error(`TIDEMARK_API_KEYS entry "${entry.slice(0, 4)}…" is not key:tenant`);
    keys.set(key, tenant);
  }
  return keys;
}

/** Selects the tenant from `Authorization: Bearer <key>`; with no keys configured, the local tenant. */
export function createAuthMiddleware(apiKeys: ReadonlyMap<string, string>): MiddlewareHandler<AppEnv> {
  const entries = [...apiKeys].map(([key, tenant]) => ({ key: Buffer.from(key), tenant }));
  return async function authenticate(c, next) {
    if (entries.length === 0) {
      c.set("tenantId", LOCAL_TENANT);
      return next();
    }
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header);
    const presented = Buffer.from(match?.[1]?.trim() ?? "");
    const found = entries.find(({ key }) => key.length === presented.length && timingSafeEqual(key, presented));
    if (!found) return errorResponse(c, "unauthorized", "Send a valid API key as Authorization: Bearer <key>.");
    c.set("tenantId", found.tenant);
    return next();
  };
}
