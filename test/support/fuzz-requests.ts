/**
 * Requests for one operation, drawn by fast-check: path ids (own, foreign, unknown, malformed),
 * query values, headers, and a body derived from the operation's schema, then mutated (a field
 * missing, of the wrong type, huge, too deep, with a NUL or a lone surrogate; an extra field;
 * invalid JSON or UTF-8; another content type). A {@link RequestSpec} is symbolic; `renderRequest`
 * writes its bytes against the tenants' real ids.
 */
import fc from "fast-check";
import type { RawRequest } from "./fuzz-http-client.js";
import type { BodySchema, FuzzOperation } from "./fuzz-operations.js";
import { anyValue, Deep, encodeSegment, fuzzText, Huge, idChoice, IdRef, type IdKind } from "./fuzz-values.js";

/** How a request authenticates. */
export type AuthChoice = "key" | "none" | "wrong" | "basic" | "lowercase_bearer" | "x-api-key";

/** A body, symbolically. */
export type BodySpec =
  | { mode: "none" }
  | { mode: "json"; value: unknown; contentType: string }
  | { mode: "text"; text: string; contentType: string }
  | { mode: "bytes"; bytes: number[]; contentType: string };

/** One request, symbolically: what fast-check draws, prints and shrinks. */
export interface RequestSpec {
  tenant: 0 | 1;
  auth: AuthChoice;
  method: string;
  params: Record<string, IdRef>;
  query: [string, string | Huge][];
  headers: [string, string | Huge][];
  body: BodySpec;
  /** Whether the body is schema-valid apart from its ids (so a foreign id in it must answer like an unknown one). */
  isBodyValid: boolean;
}

/** What a request is written against: each tenant's key and real ids. */
export interface FuzzWorld {
  keys: readonly [string, string];
  /** The ids of each tenant, by kind (agents are deployment-wide: both tenants list them). */
  ids: readonly [Record<IdKind, string[]>, Record<IdKind, string[]>];
}

const JSON_TYPE = "application/json";
const CONTENT_TYPES = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/json; charset=utf-16",
  "application/vnd.api+json",
  "APPLICATION/JSON",
  "",
  "application/jsonx",
  "application/json;;",
  "*/*",
];
const INVALID_JSON = [
  "",
  " ",
  "{",
  '{"a":',
  "[",
  "nul",
  '{"a":1}}',
  "{'a':1}",
  "\ufeff{}",
  "1e999",
  "NaN",
  '{"a":1,}',
  '"unterminated',
  '{"__proto__":{"polluted":true}}',
  '{"input":{"role":"user","content":"x"}}trailing',
  '{"a":"\\ud800"}',
  '{"a":1,"a":2}',
];
/** Bodies that are not UTF-8: a lone continuation byte, an overlong encoding, a surrogate, a cut sequence. */
const INVALID_UTF8: number[][] = [
  [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d],
  [0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d],
  [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d],
  [0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xe2, 0x82],
  [0x00, 0x00, 0x00],
];

/** Header text a client can send (no CR, LF or NUL: those never reach a server as a value). */
const headerText = fc.string({
  unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff }), fc.constant(0x09)).map((code) => String.fromCharCode(code)),
  maxLength: 40,
});

/** Query values a route may not expect, percent-encoded as they go on the wire. */
function queryValue(pattern: string | undefined): fc.Arbitrary<string | Huge> {
  const bad = fc.constantFrom<string | Huge>("-1", "-0", "99999999999999999999", "1e3", "0x10", "1.5", "%201", "+1", "abc", "", "%00", "%FF", "1%00", "Infinity", "NaN", new Huge(5_000, "9"));
  const valid = pattern ? fc.stringMatching(new RegExp(pattern)) : fuzzText.map(encodeSegment);
  return fc.oneof({ weight: 3, arbitrary: valid }, { weight: 3, arbitrary: bad }, { weight: 1, arbitrary: fuzzText.map(encodeSegment) });
}

/** The header values of a declared header. */
function headerValue(name: string): fc.Arbitrary<string | Huge> {
  const garbage = fc.oneof(headerText, fc.constantFrom<string | Huge>("-1", "99999999999999999999", "1e3", " 7 ", "0", "2", "abc", "1,2", new Huge(20_000, "x")));
  if (name === "last-event-id") return fc.oneof(fc.integer({ min: 0, max: 60 }).map(String), garbage);
  return fc.oneof(headerText.filter((value) => value.trim() !== ""), garbage);
}

/** A value valid for `schema` (ids drawn from the pools, strings short). */
function validValue(schema: BodySchema, depth = 0): fc.Arbitrary<unknown> {
  if (schema["x-id"]) return idChoice(schema["x-id"], schema["x-name"]).map((ref) => ref as unknown);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case "string":
      return fc.string({ minLength: Math.max(1, schema.minLength ?? 1), maxLength: Math.min(schema.maxLength ?? 30, 30) });
    case "integer":
      return fc.integer({ min: schema.minimum ?? 0, max: (schema.minimum ?? 0) + 40 });
    case "boolean":
      return fc.boolean();
    case "array":
      return fc.array(validValue(schema.items ?? {}, depth + 1), { minLength: 1, maxLength: 3 });
    case "object": {
      if (!schema.properties) return fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), depth > 2 ? fc.string() : fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
      const required = schema.required ?? [];
      const model = Object.fromEntries(Object.entries(schema.properties).map(([name, property]) => [name, validValue(property, depth + 1)]));
      return fc.record(model, { requiredKeys: required.filter((name) => name in model) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** The field paths of a body schema, two levels deep (`input`, `input.content`). */
function fieldPaths(schema: BodySchema | undefined): string[][] {
  const paths: string[][] = [];
  for (const [name, property] of Object.entries(schema?.properties ?? {})) {
    paths.push([name]);
    for (const inner of Object.keys(property.properties ?? {})) paths.push([name, inner]);
  }
  return paths.length > 0 ? paths : [["field"]];
}

type Mutation =
  | { op: "drop"; at: number }
  | { op: "set"; at: number; value: unknown }
  | { op: "extra"; key: string; value: unknown }
  | { op: "replace"; value: unknown };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.nat(20).map((at) => ({ op: "drop" as const, at })),
  { weight: 4, arbitrary: fc.record({ op: fc.constant("set" as const), at: fc.nat(20), value: anyValue }) },
  fc.record({ op: fc.constant("extra" as const), key: fc.oneof(fuzzText, fc.constantFrom("__proto__", "constructor", "a\u0000")), value: anyValue }),
  fc.record({ op: fc.constant("replace" as const), value: fc.oneof(anyValue, fc.constant([]), fc.constant({})) }),
);

/** `value` (a valid body) with `mutations` applied, on a copy. */
function mutate(value: unknown, mutations: readonly Mutation[], paths: string[][]): unknown {
  let body: any = copyOf(value);
  for (const change of mutations) {
    if (change.op === "replace") {
      body = change.value;
      continue;
    }
    if (typeof body !== "object" || body === null || Array.isArray(body)) body = {};
    if (change.op === "extra") {
      Object.defineProperty(body, change.key, { value: change.value, enumerable: true, configurable: true, writable: true });
      continue;
    }
    const path = paths[change.at % paths.length]!;
    let parent = body;
    for (const key of path.slice(0, -1)) {
      if (typeof parent[key] !== "object" || parent[key] === null) parent[key] = {};
      parent = parent[key];
    }
    const last = path.at(-1)!;
    if (change.op === "drop") delete parent[last];
    else parent[last] = change.value;
  }
  return body;
}

/** A deep copy of a drawn value that keeps its symbolic parts as they are. */
function copyOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyOf);
  if (typeof value !== "object" || value === null || value instanceof IdRef || value instanceof Huge || value instanceof Deep) return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, copyOf(item)]));
}

/** A body for `schema`: valid, mutated, invalid JSON or UTF-8, absent, or of another content type. */
function bodySpec(schema: BodySchema | undefined): fc.Arbitrary<{ body: BodySpec; isBodyValid: boolean }> {
  const contentType = fc.oneof({ weight: 8, arbitrary: fc.constant(JSON_TYPE) }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) });
  const valid = schema ? validValue(schema) : fc.constant({});
  const json = (isValid: boolean) => (value: unknown, type: string) => ({ body: { mode: "json" as const, value, contentType: type }, isBodyValid: isValid && type === JSON_TYPE });
  const paths = fieldPaths(schema);
  const none = fc.constant({ body: { mode: "none" as const }, isBodyValid: false });
  const options = [
    { weight: schema ? 3 : 1, arbitrary: fc.tuple(valid, contentType).map(([value, type]) => json(true)(value, type)) },
    {
      weight: schema ? 6 : 1,
      arbitrary: fc
        .tuple(valid, fc.array(mutation, { minLength: 1, maxLength: 3 }), contentType)
        .map(([value, mutations, type]) => json(false)(mutate(value, mutations, paths), type)),
    },
    { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...INVALID_JSON), contentType).map(([text, type]) => ({ body: { mode: "text" as const, text, contentType: type }, isBodyValid: false })) },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...INVALID_UTF8), contentType).map(([bytes, type]) => ({ body: { mode: "bytes" as const, bytes, contentType: type }, isBodyValid: false })),
    },
    { weight: schema ? 1 : 6, arbitrary: none },
  ];
  return fc.oneof(...options);
}

/** Requests for `operation`. */
export function requestSpec(operation: FuzzOperation): fc.Arbitrary<RequestSpec> {
  const params = Object.fromEntries(operation.pathParams.map(({ name, of }) => [name, idChoice(of)]));
  const query = fc.tuple(
    ...operation.query.map(({ name, pattern }) => fc.option(queryValue(pattern).map((value): [string, string | Huge] => [name, value]), { freq: 2 })),
    fc.option(fc.tuple(fuzzText.map(encodeSegment), queryValue(undefined)), { freq: 6 }),
  );
  const headers = fc.tuple(
    ...operation.headers.map((name) => fc.option(headerValue(name).map((value): [string, string | Huge] => [name, value]), { freq: 2 })),
    fc.option(fc.tuple(fc.constantFrom("x-forwarded-for", "accept", "accept-encoding", "x-huge"), headerValue("x")), { freq: 5 }),
  );
  const auth = fc.oneof(
    { weight: 17, arbitrary: fc.constant<AuthChoice>("key") },
    { weight: 1, arbitrary: fc.constantFrom<AuthChoice>("none", "wrong", "basic", "lowercase_bearer", "x-api-key") },
  );
  // Now and then a method the route does not have, on the same path.
  const method = fc.oneof({ weight: 19, arbitrary: fc.constant(operation.method) }, { weight: 1, arbitrary: fc.constantFrom("PUT", "PATCH", "DELETE", "OPTIONS", "GET", "POST", "HEAD") });
  return fc
    .record({
      tenant: fc.constantFrom<0 | 1>(0, 1),
      auth,
      method,
      params: fc.record(params),
      query,
      headers,
      bodyAndValidity: bodySpec(operation.body),
    })
    .map(({ bodyAndValidity, query: drawnQuery, headers: drawnHeaders, ...rest }) => ({
      ...rest,
      query: drawnQuery.filter((entry): entry is [string, string | Huge] => entry !== null),
      headers: drawnHeaders.filter((entry): entry is [string, string | Huge] => entry !== null),
      ...bodyAndValidity,
    }));
}

/** The id a reference names, for the acting tenant. */
export function resolveId(world: FuzzWorld, tenant: 0 | 1, ref: IdRef): string {
  const { choice } = ref;
  const pick = (owner: 0 | 1, kind: IdKind, index: number) => {
    const pool = world.ids[owner][kind];
    return pool[index % pool.length] ?? "";
  };
  switch (choice.kind) {
    case "own":
      return pick(tenant, ref.of, choice.index);
    case "foreign":
      return pick(tenant === 0 ? 1 : 0, ref.of, choice.index);
    case "unknown":
      return `${ref.of === "agent" ? "agent" : ref.of}_${choice.suffix}`;
    case "other_kind":
      return pick(tenant, choice.of, choice.index);
    case "raw":
      return choice.segment;
    case "text":
      return choice.text;
    case "long":
      return choice.char.repeat(choice.length);
  }
}

/**
 * The JSON text of `value`, its symbolic parts made real. Deep nesting is written as text: a
 * recursive `JSON.stringify` of 5,000 levels would overflow this side's stack first.
 */
function jsonOf(world: FuzzWorld, tenant: 0 | 1, value: unknown): string {
  if (value instanceof IdRef) return JSON.stringify(resolveId(world, tenant, value));
  if (value instanceof Huge) return JSON.stringify(value.char.repeat(value.length));
  if (value instanceof Deep) {
    const levels = value.depth - 1;
    return value.isObject ? `${'{"a":'.repeat(levels)}{}${"}".repeat(levels)}` : `${"[".repeat(levels)}[]${"]".repeat(levels)}`;
  }
  if (Array.isArray(value)) return `[${value.map((item) => jsonOf(world, tenant, item)).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    return `{${Object.entries(value)
      .map(([key, item]) => `${JSON.stringify(key)}:${jsonOf(world, tenant, item)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** A path segment for a reference: ids as they are, raw segments raw, text percent-encoded. */
function segmentOf(world: FuzzWorld, tenant: 0 | 1, ref: IdRef): string {
  const id = resolveId(world, tenant, ref);
  if (ref.choice.kind === "raw" || (ref.choice.kind === "long" && ref.choice.char.startsWith("%"))) return id;
  return encodeSegment(id);
}

/** The bytes of `spec` for `operation`. */
export function renderRequest(world: FuzzWorld, operation: FuzzOperation, spec: RequestSpec): RawRequest {
  const { tenant } = spec;
  let path = operation.path;
  for (const [name, ref] of Object.entries(spec.params)) path = path.replace(`{${name}}`, segmentOf(world, tenant, ref));
  const text = (value: string | Huge) => (value instanceof Huge ? value.char.repeat(value.length) : value);
  if (spec.query.length > 0) path += `?${spec.query.map(([name, value]) => `${name}=${text(value)}`).join("&")}`;
  const headers: Record<string, string> = {};
  const key = world.keys[tenant];
  if (spec.auth === "key") headers.authorization = `Bearer ${key}`;
  if (spec.auth === "wrong") headers.authorization = `Bearer ${key}x`;
  if (spec.auth === "basic") headers.authorization = `Basic ${Buffer.from(`${key}:`).toString("base64")}`;
  if (spec.auth === "lowercase_bearer") headers.authorization = `bearer   ${key}`;
  if (spec.auth === "x-api-key") headers["x-api-key"] = key;
  for (const [name, value] of spec.headers) headers[name] = text(value);
  const { body } = spec;
  if (body.mode === "none") return { method: spec.method, path, headers };
  if (body.contentType !== "") headers["content-type"] = body.contentType;
  const bytes =
    body.mode === "json"
      ? Buffer.from(jsonOf(world, tenant, body.value))
      : body.mode === "text"
        ? Buffer.from(body.text)
        : Buffer.from(body.bytes);
  return { method: spec.method, path, headers, body: bytes };
}
