/**
 * Structured output, honestly (issue 19): a step that must produce an object keeps it only when the
 * whole generation parses as JSON and validates against the step's schema. A prefix that happens to
 * parse, or an object missing a field, is never passed off as the object.
 */
import { z } from "zod";
import type { ModelResponseFormat } from "../core/model.js";
import { StructuredOutputError } from "./structured-output-error.js";

/** The provider's response format for `schema`: its JSON Schema, under `name`. */
export function responseFormatFor(schema: z.ZodType, name: string): ModelResponseFormat {
  return { type: "json", name, schema: z.toJSONSchema(schema, { unrepresentable: "any" }) as Record<string, unknown> };
}

/** The object `text` holds, validated by `schema`; throws {@link StructuredOutputError} otherwise. */
export function parseStructuredOutput<T>(text: string, schema: z.ZodType<T>): T {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // An object cut short (or prose instead of JSON): there is no object, not a smaller one.
    throw new StructuredOutputError("not_json", [], { cause: error });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new StructuredOutputError(
      "schema_mismatch",
      parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })),
    );
  }
  return parsed.data;
}
