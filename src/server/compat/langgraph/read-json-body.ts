import type { Context } from "hono";
import type { z } from "zod";
import { checkJsonBody } from "../../check-json-body.js";
import { LangGraphError } from "./langgraph-error.js";

/**
 * The request's JSON body parsed by `schema` (an absent body reads as `{}`). Anything else is a
 * 422 as the Agent Server answers it: not JSON, a NUL, nesting too deep, or a schema issue.
 */
export async function readJsonBody<T>(c: Context, schema: z.ZodType<T>): Promise<T> {
  const text = await c.req.text();
  let body: unknown = {};
  if (text.trim() !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      throw new LangGraphError(422, "invalid_json", "The request body is not valid JSON.");
    }
  }
  const problem = checkJsonBody(body);
  if (problem) throw new LangGraphError(422, "invalid_request", `${problem.path || "body"}: ${problem.message}`);
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    throw new LangGraphError(422, "invalid_request", `${issue?.path.join(".") || "body"}: ${issue?.message ?? "is not valid"}`);
  }
  return parsed.data;
}
