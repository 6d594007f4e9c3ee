/**
 * An agent's config as form fields, from the JSON Schema `GET /v1/agents` serves: a list of
 * strings is a text area (one entry a line), an integer or a number a number field, a string a
 * text field, a boolean a checkbox. Anything else is left to the agent's default. The server
 * validates the result again (400 `invalid_config`): this only helps the user get it right.
 */

/** One field of an agent's config form. */
export interface ConfigField {
  name: string;
  kind: "lines" | "integer" | "number" | "text" | "boolean";
  label: string;
  help: string;
  isRequired: boolean;
  minimum: number | null;
  maximum: number | null;
  /** The schema's default, as the field's text ("" for none). */
  initial: string;
}

/** What the user typed, by field name (a checkbox is "true" or ""). */
export type ConfigValues = Readonly<Record<string, string>>;

type Schema = Record<string, unknown>;

const asSchema = (value: unknown): Schema => (typeof value === "object" && value !== null ? (value as Schema) : {});
const numberOr = (value: unknown): number | null => (typeof value === "number" && Number.isFinite(value) ? value : null);

/** The fields of an agent's config schema that a form can offer, in the schema's order. */
export function configFields(schema: Record<string, unknown>): ConfigField[] {
  const properties = asSchema(schema.properties);
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
  return Object.entries(properties).flatMap(([name, raw]): ConfigField[] => {
    const property = asSchema(raw);
    const kind = fieldKind(property);
    if (kind === null) return [];
    const initial = property.default;
    const hasDefault = initial !== undefined;
    return [
      {
        name,
        kind,
        label: humanName(name),
        help: helpFor(kind, property),
        isRequired: required.includes(name) && !hasDefault,
        minimum: numberOr(kind === "lines" ? property.minItems : property.minimum),
        maximum: numberOr(kind === "lines" ? property.maxItems : property.maximum),
        initial: Array.isArray(initial) ? initial.join("\n") : initial === undefined || initial === false ? "" : String(initial),
      },
    ];
  });
}

function fieldKind(property: Schema): ConfigField["kind"] | null {
  switch (property.type) {
    case "array":
      return asSchema(property.items).type === "string" ? "lines" : null;
    case "integer":
    case "number":
    case "boolean":
      return property.type;
    case "string":
      return "text";
    default:
      return null;
  }
}

/** `max_parallel` → "Max parallel". */
function humanName(name: string): string {
  const words = name.replace(/[_-]+/g, " ").trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function helpFor(kind: ConfigField["kind"], property: Schema): string {
  const description = typeof property.description === "string" ? property.description : "";
  if (description) return description;
  if (kind === "lines") return "One per line; leave it empty for the agent's own choice.";
  const minimum = numberOr(property.minimum);
  const maximum = numberOr(property.maximum);
  if ((kind === "integer" || kind === "number") && minimum !== null && maximum !== null) return `From ${minimum} to ${maximum}.`;
  return "";
}

/** The config the form describes (empty fields left out), or what is wrong with it, per field. */
export function buildConfig(fields: readonly ConfigField[], values: ConfigValues): { config: Record<string, unknown>; errors: Record<string, string> } {
  const config: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const field of fields) {
    const text = (values[field.name] ?? field.initial).trim();
    if (field.kind === "boolean") {
      if (text === "true") config[field.name] = true;
      continue;
    }
    if (text === "") {
      if (field.isRequired) errors[field.name] = `${field.label} is required.`;
      continue;
    }
    const outcome = parseField(field, text);
    if (typeof outcome === "string") errors[field.name] = outcome;
    else config[field.name] = outcome.value;
  }
  return { config, errors };
}

function parseField(field: ConfigField, text: string): { value: unknown } | string {
  if (field.kind === "lines") {
    const lines = text
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line.length > 0);
    if (field.maximum !== null && lines.length > field.maximum) return `${field.label}: at most ${field.maximum} lines.`;
    if (field.minimum !== null && lines.length < field.minimum) return `${field.label}: at least ${field.minimum} lines.`;
    return { value: lines };
  }
  if (field.kind === "text") return { value: text };
  const value = Number(text);
  if (!Number.isFinite(value) || (field.kind === "integer" && !Number.isInteger(value))) {
    return `${field.label} must be ${field.kind === "integer" ? "a whole number" : "a number"}.`;
  }
  if (field.minimum !== null && value < field.minimum) return `${field.label} must be at least ${field.minimum}.`;
  if (field.maximum !== null && value > field.maximum) return `${field.label} must be at most ${field.maximum}.`;
  return { value };
}
