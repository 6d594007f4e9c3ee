/**
 * Errors under the OpenAI paths in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`
 * with the same 4xx. Every error is first made the native way (thrown `TidemarkError`s, the shared
 * auth, body-limit and JSON guards, the not-found handler), then reshaped here, on the way out: one
 * place, so no error of these paths reaches an OpenAI client in another shape.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../../app-env.js";

/** The OpenAI error body. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** OpenAI's error `type` for an HTTP status. */
export function openAiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/** A native error body (`{error: code, message, …details}`) in OpenAI's shape; undefined when `body` is not one. */
export function toOpenAiError(status: number, body: unknown): OpenAiErrorBody | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const native = body as { error?: unknown; message?: unknown; param?: unknown; issues?: unknown };
  if (typeof native.error !== "string") return undefined;
  const firstIssue = Array.isArray(native.issues) ? (native.issues[0] as { path?: unknown } | undefined) : undefined;
  const param = typeof native.param === "string" ? native.param : typeof firstIssue?.path === "string" && firstIssue.path ? firstIssue.path : null;
  return {
    error: {
      message: typeof native.message === "string" ? native.message : "The request failed.",
      type: openAiErrorType(status),
      param,
      code: native.error === "unauthorized" ? "invalid_api_key" : native.error,
    },
  };
}

/** Reshapes the native JSON error a later handler answered with into OpenAI's shape. */
export const openAiErrorShape: MiddlewareHandler<AppEnv> = async function openAiErrorShape(c, next) {
  await next();
  const response = c.res;
  if (response.status < 400 || !(response.headers.get("content-type") ?? "").startsWith("application/json")) return;
  const reshaped = toOpenAiError(response.status, await response.clone().json().catch(() => undefined));
  if (!reshaped) return;
  const headers = new Headers(response.headers);
  headers.delete("content-length");
  // Cleared first: Hono would otherwise copy the old headers (its length among them) onto the new response.
  c.res = undefined as unknown as Response;
  c.res = new Response(JSON.stringify(reshaped), { status: response.status, headers });
};
