import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env.js";
import { bearerKey, createKeyLookup } from "./auth.js";
import { errorResponse } from "./errors.js";

/** A tenant's request rate: `burst` requests at once, refilled at `requestsPerSecond` (0: no limit). */
export interface RateLimitOptions {
  requestsPerSecond: number;
  burst: number;
  /** The clock in ms (fake time in tests). */
  now?: () => number;
}

export const DEFAULT_RATE_LIMIT: RateLimitOptions = { requestsPerSecond: 1_000, burst: 2_000 };

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * Limits each tenant's request rate with a token bucket (one per tenant, in this process): past
 * it, 429 `rate_limited` with `Retry-After`. The tenant is the one the request's key names, read
 * here as every layer's auth reads it; a request without a valid key passes on to be refused there.
 */
export function createRateLimit(apiKeys: ReadonlyMap<string, string>, options: RateLimitOptions): MiddlewareHandler<AppEnv> {
  // 0 turns the limit off (a deployment behind its own gateway). Without API keys there is one
  // local tenant on a loopback address (`npm start`): nobody to protect it from but itself.
  if (options.requestsPerSecond <= 0 || apiKeys.size === 0) return async (_c, next) => next();
  const tenantOf = createKeyLookup(apiKeys);
  const now = options.now ?? Date.now;
  const buckets = new Map<string, Bucket>();
  return async function limitRate(c, next) {
    const tenant = tenantOf(bearerKey(c.req.header("authorization")) ?? c.req.header("x-api-key")?.trim());
    if (!tenant) return next();
    const at = now();
    const bucket = buckets.get(tenant) ?? { tokens: options.burst, updatedAt: at };
    bucket.tokens = Math.min(options.burst, bucket.tokens + ((at - bucket.updatedAt) / 1000) * options.requestsPerSecond);
    bucket.updatedAt = at;
    buckets.set(tenant, bucket);
    if (bucket.tokens < 1) {
      const retryAfterS = Math.max(1, Math.ceil((1 - bucket.tokens) / options.requestsPerSecond));
      return errorResponse(c, "rate_limited", `Too many requests: at most ${options.requestsPerSecond} a second (bursts of ${options.burst}).`, {
        retry_after_s: retryAfterS,
      });
    }
    bucket.tokens -= 1;
    return next();
  };
}
