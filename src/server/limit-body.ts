import type { Context, Env, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";

/** Options for {@link limitBody}: Hono's `bodyLimit`'s. */
export interface LimitBodyOptions<E extends Env> {
  maxSize: number;
  onError(c: Context<E>): Response | Promise<Response>;
}

/**
 * Hono's `bodyLimit`, decided from the headers whenever they say the size: a body with a
 * `Content-Length` (the parser holds it to exactly that) or none at all. Hono's own middleware
 * asks for the request's body stream first, and on Node that builds a full web `Request`
 * around every request, a GET's included (about a tenth of a millisecond each); a route that
 * reads the JSON after this reads it straight from the socket. A chunked body is counted as it
 * is read, by Hono's middleware.
 */
export function limitBody<E extends Env>(options: LimitBodyOptions<E>): MiddlewareHandler<E> {
  const countAsRead = bodyLimit(options);
  return async function limitBodyByHeaders(c, next) {
    if (c.req.header("transfer-encoding") !== undefined) return countAsRead(c, next);
    const length = c.req.header("content-length");
    if (length !== undefined && Number(length) > options.maxSize) return options.onError(c);
    return next();
  };
}
