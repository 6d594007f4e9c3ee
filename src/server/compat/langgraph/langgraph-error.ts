/**
 * Errors of the LangGraph layer, in the Agent Server's shape: `{detail, error}` with a 4xx.
 * Tidemark's own errors keep their code and status; only the body's shape changes.
 */
import { markRejected } from "../../errors.js";
import type { Context, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import { TidemarkError } from "../../../core/index.js";
import type { Logger } from "../../../runtime/index.js";

const MARKER = Symbol.for("tidemark.langgraph_error");

/** A refusal of the LangGraph layer that Tidemark's native API has no code for (e.g. `rollback`). */
export class LangGraphError extends Error {
  readonly [MARKER] = true;
  readonly status: 400 | 404 | 409 | 410 | 422;
  readonly code: string;

  constructor(status: 400 | 404 | 409 | 410 | 422, code: string, message: string) {
    super(message);
    this.name = "LangGraphError";
    this.status = status;
    this.code = code;
  }

  /** Whether `error` is a LangGraphError (also across module copies). */
  static isInstance(error: unknown): error is LangGraphError {
    return typeof error === "object" && error !== null && MARKER in error;
  }
}

/** The Agent Server's error body: FastAPI's `detail`, with Tidemark's stable `error` code beside it. */
export function langGraphErrorResponse(c: Context, status: number, code: string, detail: string, extra: Record<string, unknown> = {}): Response {
  markRejected(c, code, extra);
  return c.json({ detail, error: code, ...extra }, status as 400);
}

/** Maps anything a LangGraph route throws to the Agent Server's shape; an unexpected failure is logged and says nothing. */
export function createLangGraphErrorHandler(logger: Logger) {
  return function handleLangGraphError(error: Error, c: Context): Response {
    if (LangGraphError.isInstance(error)) return langGraphErrorResponse(c, error.status, error.code, error.message);
    if (TidemarkError.isInstance(error)) return langGraphErrorResponse(c, error.status, error.code, error.message, error.details);
    if (error instanceof HTTPException && error.status < 500) {
      return langGraphErrorResponse(c, error.status, error.status === 413 ? "payload_too_large" : "invalid_request", "The request is not valid.");
    }
    logger.error({ path: c.req.path, error: error.stack ?? String(error) }, "unexpected error");
    return langGraphErrorResponse(c, 500, "internal_error", "Something went wrong on the server.");
  };
}

/**
 * Reshapes a native JSON error (`{error, message, …details}`) that a middleware shared with the
 * native API answered before the layer's routes (the per-tenant rate limit) into the Agent
 * Server's shape, headers kept (`Retry-After`); the layer's own errors are already in it.
 */
export const langGraphErrorShape: MiddlewareHandler = async function langGraphErrorShape(c, next) {
  await next();
  const response = c.res;
  if (response.status < 400 || !(response.headers.get("content-type") ?? "").startsWith("application/json")) return;
  const body: unknown = await response.clone().json().catch(() => undefined);
  if (typeof body !== "object" || body === null || "detail" in body) return;
  const { error, message, ...details } = body as Record<string, unknown>;
  if (typeof error !== "string" || typeof message !== "string") return;
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  // Cleared first: Hono would otherwise copy the old headers (its length among them) onto the new response.
  c.res = undefined as unknown as Response;
  c.res = new Response(JSON.stringify({ detail: message, error, ...details }), { status: response.status, headers });
};
