/**
 * The demo model's answer to a structured request: the smallest object a JSON Schema describes,
 * with plain example values, so a structured step works without a key (and can be stopped halfway).
 */

type Schema = Record<string, unknown>;

/** Deep schemas end here (a recursive `$ref` would otherwise never end). */
const MAX_DEPTH = 8;

/** An example value for `schema`: objects with every listed property, one array item, the first enum value. */
export function demoObject(schema: Schema, depth = 0): unknown {
  if (depth > MAX_DEPTH) return null;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  const anyOf = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined;
  if (Array.isArray(anyOf) && anyOf.length > 0) return demoObject(anyOf[0]!, depth + 1);
  const type = Array.isArray(schema.type) ? (schema.type[0] as string) : (schema.type as string | undefined);
  switch (type) {
    case "object": {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, demoObject(property, depth + 1)]));
    }
    case "array": {
      const items = schema.items as Schema | undefined;
      const count = typeof schema.minItems === "number" ? Math.max(1, schema.minItems) : 1;
      return items ? Array.from({ length: count }, () => demoObject(items, depth + 1)) : [];
    }
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? Math.ceil(schema.minimum) : 1;
    case "boolean":
      return true;
    case "null":
      return null;
    case "string":
      return typeof schema.minLength === "number" && schema.minLength > 4 ? "demo".padEnd(schema.minLength, "o") : "demo";
    default:
      return null;
  }
}

/** `value` as JSON text split into short pieces (about one token each), as a model would stream it. */
export function demoObjectChunks(value: unknown): string[] {
  return JSON.stringify(value).match(/[{}[\],:]|"[^"]*"|[^{}[\],:"]+/g) ?? [];
}
