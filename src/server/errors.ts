import type { Context } from "hono";
import type { IncomingMessage } from "node:http";
import { HTTPException } from "hono/http-exception";
import { ERROR_CODES, TidemarkError, type ErrorCode } from "../core/index.js";
import type { Logger } from "../runtime/index.js";
import type { AppEnv } from "./app-env.js";
import { confirmUrl } from "./wire.js";

/** A JSON error response with a stable code. */
export function errorResponse(c: Context, code: ErrorCode, message: string, details: Record<string, unknown> = {}): Response {
  markRejected(c, code, details);
  return c.json({ error: code, message, ...details }, ERROR_CODES[code].status as 400);
}

/**
 * What every error answer, in any layer's shape, does besides its body: it is counted by its code
 * (`tidemark_requests_rejected_total`), and a refusal for load says when to come back, as a
 * header every HTTP client knows.
 */
export function markRejected(c: Context, code: string, details: Record<string, unknown> = {}): void {
  (c as Context<AppEnv>).set("errorCode", code);
  if (typeof details.retry_after_s === "number") c.header("retry-after", String(details.retry_after_s));
}

/** One issue of an invalid request: where (`input.content`; empty for the body itself) and what is wrong. */
export interface RequestIssue {
  path: string;
  message: string;
}

/** 400 `invalid_request` naming the first issue in its message and listing them all. */
export function invalidRequestResponse(c: Context, issues: readonly RequestIssue[]): Response {
  const [first] = issues;
  return errorResponse(c, "invalid_request", `The request is not valid: ${first?.path || "body"}: ${first?.message}`, { issues });
}

/**
 * Maps any thrown error to a JSON error. Known errors keep their code and safe message; an
 * unexpected one is logged and answered with a generic 500 that reveals nothing.
 */
export function createErrorHandler(logger: Logger) {
  return function handleError(error: Error, c: Context): Response {
    if (TidemarkError.isInstance(error)) return errorResponse(c, error.code, error.message, withLinks(error.code, error.details));
    if (error instanceof HTTPException) {
      if (error.status === 413) return errorResponse(c, "payload_too_large", "The request body is too large.");
      if (error.status === 415) return errorResponse(c, "unsupported_media_type", "Send the body as application/json.");
      if (error.status === 400) return errorResponse(c, "invalid_json", "The request body is not valid JSON.");
      if (error.status < 500) return errorResponse(c, "invalid_request", "The request is not valid.");
    }
    if (isClientAbort(c)) {
      // Not a server failure: the client went away mid-upload, and no one will read this answer.
      logger.info({ path: c.req.path }, "the client closed the connection before its request body ended");
      return errorResponse(c, "invalid_request", "The request body ended before it was complete.");
    }
    logger.error({ path: c.req.path, error: error.stack ?? String(error) }, "unexpected error");
    return errorResponse(c, "internal_error", "Something went wrong on the server.");
  };
}

/** An error's details with the URLs a client follows next (the runtime names ids, the server builds URLs). */
function withLinks(code: ErrorCode, details: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (code !== "operation_unconfirmed" || !details) return details;
  const { thread_id: threadId, operations } = details;
  if (typeof threadId !== "string" || !Array.isArray(operations) || typeof operations[0] !== "string") return details;
  return { ...details, confirm_url: confirmUrl(threadId, operations[0]) };
}

/** Whether the client closed the connection before its request was complete (reading the body then fails). */
function isClientAbort(c: Context): boolean {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming !== undefined && !incoming.complete && incoming.destroyed;
}
