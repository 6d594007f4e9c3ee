/**
 * The operations the HTTP fuzz sends requests to: every operation of the server's own OpenAPI
 * document, read from it (so a new route is fuzzed the day it is documented), and a hand-listed
 * set for the compatibility layers the document does not describe (OpenAI, LangGraph, AG-UI).
 */
import type { IdKind } from "./fuzz-values.js";

/** The part of JSON Schema the document's request bodies use. */
export interface BodySchema {
  type?: string;
  enum?: readonly unknown[];
  properties?: Record<string, BodySchema>;
  required?: readonly string[];
  additionalProperties?: unknown;
  items?: BodySchema;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  $ref?: string;
  /** Not JSON Schema: the kind of id this string names (the fuzz puts real and foreign ids there). */
  "x-id"?: IdKind;
  /** Not JSON Schema: the id names something new (a client-named run), it does not refer to what exists. */
  "x-name"?: boolean;
}

/** One operation: where it is, what it takes. */
export interface FuzzOperation {
  name: string;
  method: string;
  /** The path with `{param}` placeholders. */
  path: string;
  pathParams: { name: string; of: IdKind }[];
  /** Query parameters with the pattern of their valid values, when there is one. */
  query: { name: string; pattern?: string }[];
  headers: string[];
  body?: BodySchema;
}

/** What a path parameter's name says it holds. */
const PARAM_KINDS: Record<string, IdKind> = {
  thread_id: "thr",
  run_id: "run",
  op_id: "op",
  message_id: "msg",
  response_id: "resp",
  model: "agent",
  assistant_id: "agent",
};

/** What a body field's name says it holds. */
const FIELD_KINDS: Record<string, IdKind> = {
  from_checkpoint_id: "cp",
  resume_from_checkpoint_id: "cp",
  checkpoint_id: "cp",
  before: "cp",
  message_id: "msg",
  run_id: "run",
  thread_id: "thr",
  previous_response_id: "resp",
  agent: "agent",
  model: "agent",
  assistant_id: "agent",
};

interface OpenApiParameter {
  in: string;
  name: string;
  schema?: { pattern?: string };
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { parameters?: OpenApiParameter[]; requestBody?: { content: Record<string, { schema: BodySchema }> } }>>;
  components: { schemas: Record<string, BodySchema> };
}

const METHODS = ["get", "put", "post", "delete", "patch"];

/** Every operation of the OpenAPI document, with its body schema resolved and its id fields marked. */
export function operationsOf(document: OpenApiDocument): FuzzOperation[] {
  const resolve = (schema: BodySchema): BodySchema => {
    const resolved = schema.$ref ? document.components.schemas[schema.$ref.replace("#/components/schemas/", "")]! : schema;
    return markIds(resolved, resolve);
  };
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => {
        const parameters = operation.parameters ?? [];
        const schema = operation.requestBody?.content["application/json"]?.schema;
        return {
          name: `${method.toUpperCase()} ${path}`,
          method: method.toUpperCase(),
          path,
          pathParams: parameters.filter((p) => p.in === "path").map((p) => ({ name: p.name, of: PARAM_KINDS[p.name] ?? "thr" })),
          query: parameters.filter((p) => p.in === "query").map((p) => ({ name: p.name, pattern: p.schema?.pattern })),
          headers: parameters.filter((p) => p.in === "header").map((p) => p.name),
          body: schema ? resolve(schema) : undefined,
        };
      }),
  );
}

function markIds(schema: BodySchema, resolve: (schema: BodySchema) => BodySchema): BodySchema {
  if (!schema.properties) return schema;
  const properties = Object.fromEntries(
    Object.entries(schema.properties).map(([name, property]) => {
      const resolved = resolve(property);
      const kind = resolved.type === "string" ? FIELD_KINDS[name] : undefined;
      return [name, kind ? { ...resolved, "x-id": kind, "x-name": name === "run_id" } : resolved];
    }),
  );
  return { ...schema, properties };
}

const text = (maxLength = 200): BodySchema => ({ type: "string", minLength: 1, maxLength });
const id = (of: IdKind): BodySchema => ({ type: "string", "x-id": of });
const object = (properties: Record<string, BodySchema>, required: string[] = []): BodySchema => ({ type: "object", properties, required });
const anything: BodySchema = {};

const LANGGRAPH_RUN = object(
  {
    assistant_id: id("agent"),
    input: object({ messages: { type: "array", items: object({ role: { enum: ["user", "human"] }, content: text() }, ["role", "content"]) } }),
    metadata: { type: "object", additionalProperties: {} },
    stream_mode: { enum: ["values", "messages-tuple", "updates", "events"] },
    stream_resumable: { type: "boolean" },
    multitask_strategy: { enum: ["reject", "interrupt", "rollback", "enqueue"] },
    on_disconnect: { enum: ["cancel", "continue"] },
    checkpoint_id: id("cp"),
    command: anything,
  },
  ["assistant_id"],
);

/** The compatibility layers' routes (not in the OpenAPI document), as their clients call them. */
export const COMPAT_OPERATIONS: FuzzOperation[] = [
  { name: "GET /v1/models", method: "GET", path: "/v1/models", pathParams: [], query: [], headers: [] },
  { name: "GET /v1/models/{model}", method: "GET", path: "/v1/models/{model}", pathParams: [{ name: "model", of: "agent" }], query: [], headers: [] },
  {
    name: "POST /v1/responses",
    method: "POST",
    path: "/v1/responses",
    pathParams: [],
    query: [],
    headers: [],
    body: object(
      {
        model: id("agent"),
        input: text(),
        instructions: text(),
        background: { enum: [true] },
        stream: { type: "boolean" },
        previous_response_id: id("resp"),
        metadata: { type: "object", additionalProperties: { type: "string" } },
      },
      ["model", "input", "background"],
    ),
  },
  {
    name: "GET /v1/responses/{response_id}",
    method: "GET",
    path: "/v1/responses/{response_id}",
    pathParams: [{ name: "response_id", of: "resp" }],
    query: [{ name: "stream", pattern: "^(true|false)$" }, { name: "starting_after", pattern: "^-?\\d{1,3}$" }],
    headers: [],
  },
  {
    name: "POST /v1/responses/{response_id}/cancel",
    method: "POST",
    path: "/v1/responses/{response_id}/cancel",
    pathParams: [{ name: "response_id", of: "resp" }],
    query: [],
    headers: [],
  },
  {
    name: "POST /langgraph/threads",
    method: "POST",
    path: "/langgraph/threads",
    pathParams: [],
    query: [],
    headers: [],
    body: object({ metadata: { type: "object", additionalProperties: {} }, thread_id: id("thr"), if_exists: { enum: ["raise", "do_nothing"] } }),
  },
  ...(["", "/state"] as const).map((tail) => ({
    name: `GET /langgraph/threads/{thread_id}${tail}`,
    method: "GET",
    path: `/langgraph/threads/{thread_id}${tail}`,
    pathParams: [{ name: "thread_id", of: "thr" as const }],
    query: [],
    headers: [],
  })),
  {
    name: "POST /langgraph/threads/{thread_id}/history",
    method: "POST",
    path: "/langgraph/threads/{thread_id}/history",
    pathParams: [{ name: "thread_id", of: "thr" }],
    query: [],
    headers: [],
    body: object({ limit: { type: "integer", minimum: 1 }, before: id("cp") }),
  },
  ...(["", "/stream", "/wait"] as const).map((tail) => ({
    name: `POST /langgraph/threads/{thread_id}/runs${tail}`,
    method: "POST",
    path: `/langgraph/threads/{thread_id}/runs${tail}`,
    pathParams: [{ name: "thread_id", of: "thr" as const }],
    query: [],
    headers: [],
    body: LANGGRAPH_RUN,
  })),
  ...(["", "/join", "/stream"] as const).map((tail) => ({
    name: `GET /langgraph/threads/{thread_id}/runs/{run_id}${tail}`,
    method: "GET",
    path: `/langgraph/threads/{thread_id}/runs/{run_id}${tail}`,
    pathParams: [
      { name: "thread_id", of: "thr" as const },
      { name: "run_id", of: "run" as const },
    ],
    query: tail === "/stream" ? [{ name: "cancel_on_disconnect", pattern: "^(0|1|true|false)$" }, { name: "stream_mode", pattern: "^(values|updates|messages-tuple)$" }] : [],
    headers: tail === "/stream" ? ["last-event-id"] : [],
  })),
  {
    name: "POST /langgraph/threads/{thread_id}/runs/{run_id}/cancel",
    method: "POST",
    path: "/langgraph/threads/{thread_id}/runs/{run_id}/cancel",
    pathParams: [
      { name: "thread_id", of: "thr" },
      { name: "run_id", of: "run" },
    ],
    query: [{ name: "action", pattern: "^(interrupt|rollback)$" }, { name: "wait", pattern: "^(0|1|true|false)$" }],
    headers: [],
  },
  {
    name: "POST /langgraph/assistants/search",
    method: "POST",
    path: "/langgraph/assistants/search",
    pathParams: [],
    query: [],
    headers: [],
    body: object({ graph_id: id("agent"), name: id("agent"), limit: { type: "integer", minimum: 1 }, offset: { type: "integer", minimum: 0 } }),
  },
  {
    name: "GET /langgraph/assistants/{assistant_id}",
    method: "GET",
    path: "/langgraph/assistants/{assistant_id}",
    pathParams: [{ name: "assistant_id", of: "agent" }],
    query: [],
    headers: [],
  },
  {
    name: "POST /ag-ui",
    method: "POST",
    path: "/ag-ui",
    pathParams: [],
    query: [],
    headers: [],
    body: object(
      {
        threadId: id("thr"),
        runId: text(),
        messages: { type: "array", items: object({ id: text(), role: { enum: ["user", "assistant"] }, content: text() }, ["id", "role", "content"]) },
        state: anything,
        tools: { type: "array", items: anything },
        context: { type: "array", items: anything },
        forwardedProps: object({ agent: id("agent"), config: { type: "object", additionalProperties: {} } }),
      },
      ["threadId", "runId", "messages"],
    ),
  },
  {
    name: "POST /ag-ui/runs/{run_id}/cancel",
    method: "POST",
    path: "/ag-ui/runs/{run_id}/cancel",
    pathParams: [{ name: "run_id", of: "run" }],
    query: [{ name: "wait", pattern: "^\\d{1,4}$" }],
    headers: [],
  },
];
