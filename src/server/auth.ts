import type { MiddlewareHandler } from "hono";
import { timingSafeEqual } from "node:crypto";
import { ConfigurationError } from "../core/index.js";
import { errorResponse } from "./errors.js";
import type { AppEnv } from "./app-env.js";

/** The tenant served when no API keys are configured (local, loopback-only use). */
export const LOCAL_TENANT = "local";

/**
 * Parses `TIDEMARK_API_KEYS=key:tenant,key2:tenant2` into key → tenant. A malformed list (an entry
 * without its key, its tenant or the colon between them, or a key given twice) throws an error
 * that names the entry by its number, never by its text: the text holds a secret.
 */
export function parseApiKeys(value: string | undefined): Map<string, string> {
  const keys = new Map<string, string>();
  const entryOf = new Map<string, number>();
  const fail = (problem: string): never => {
    throw new ConfigurationError(`TIDEMARK_API_KEYS: ${problem}. Write key:tenant entries separated by commas.`, { setting: "TIDEMARK_API_KEYS" });
  };
  const entries = (value ?? "").split(",");
  entries.forEach((raw, index) => {
    const entry = raw.trim();
    // A trailing or doubled comma is harmless.
    if (!entry) return;
    const number = index + 1;
    const separator = entry.lastIndexOf(":");
    if (separator < 0) fail(`entry ${number} of ${entries.length} has no ":" between its key and its tenant`);
    const key = entry.slice(0, separator).trim();
    const tenant = entry.slice(separator + 1).trim();
    if (!key) fail(`entry ${number} of ${entries.length} has no key before its ":"`);
    if (!tenant) fail(`entry ${number} of ${entries.length} has no tenant after its ":"`);
    const first = entryOf.get(key);
    if (first !== undefined) fail(`entries ${first} and ${number} have the same key (a key names one tenant)`);
    entryOf.set(key, number);
    keys.set(key, tenant);
  });
  return keys;
}

/**
 * The tenant a presented key names (compared in constant time), or undefined; with no keys
 * configured, the local tenant whatever is presented.
 */
export function createKeyLookup(apiKeys: ReadonlyMap<string, string>): (presented: string | undefined) => string | undefined {
  const entries = [...apiKeys].map(([key, tenant]) => ({ key: Buffer.from(key), tenant }));
  return (presented) => {
    if (entries.length === 0) return LOCAL_TENANT;
    const bytes = Buffer.from(presented ?? "");
    return entries.find(({ key }) => key.length === bytes.length && timingSafeEqual(key, bytes))?.tenant;
  };
}

/** The key of an `Authorization: Bearer <key>` header. */
export function bearerKey(header: string | undefined): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(header ?? "")?.[1]?.trim();
}

/** Selects the tenant from `Authorization: Bearer <key>`; with no keys configured, the local tenant. */
export function createAuthMiddleware(apiKeys: ReadonlyMap<string, string>): MiddlewareHandler<AppEnv> {
  const tenantOf = createKeyLookup(apiKeys);
  return async function authenticate(c, next) {
    const tenant = tenantOf(bearerKey(c.req.header("authorization")));
    if (!tenant) return errorResponse(c, "unauthorized", "Send a valid API key as Authorization: Bearer <key>.");
    c.set("tenantId", tenant);
    return next();
  };
}
