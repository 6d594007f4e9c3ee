import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./app-env.js";
import { checkJsonBody } from "./check-json-body.js";
import { invalidRequestResponse } from "./errors.js";

/** The media types the routes' validators read as JSON (as Hono's `validator("json")` matches them). */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;
const METHODS_WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/**
 * Refuses a JSON body that holds a NUL or nests too deep (see {@link checkJsonBody}) with 400
 * `invalid_request`, before any route reads it: so for every route at once, and before a handler
 * acts (a Stop whose reason holds a NUL stops nothing). A body that is not JSON is left to the
 * route's validator, which answers `invalid_json`.
 */
export const jsonBodyGuard: MiddlewareHandler<AppEnv> = async function jsonBodyGuard(c, next) {
  const mediaType = (c.req.header("content-type") ?? "").split(";")[0]!.trim();
  if (!METHODS_WITH_BODY.has(c.req.method) || !JSON_MEDIA_TYPE.test(mediaType)) return next();
  // Read once: the route's validator reads the same cached text.
  const text = await c.req.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return next();
  }
  const problem = checkJsonBody(body);
  if (problem) return invalidRequestResponse(c, [problem]);
  return next();
};
