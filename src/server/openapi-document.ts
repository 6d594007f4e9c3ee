/**
 * `GET /v1/openapi.json`: the OpenAPI 3.1 document, made from the routes' schemas. Every
 * operation has a stable camelCase `operationId` and a tag by resource, so that generated
 * clients get readable names; the API key is a bearer security scheme, applied to every
 * operation except the system ones (which need no key).
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "./app-env.js";

/** The name of the bearer scheme in `components.securitySchemes`. */
export const API_KEY_SCHEME = "apiKey";

/** The tags operations are grouped by, in the document's order. */
export const OPENAPI_TAGS = [
  { name: "threads", description: "Conversations: create, list, read, terminate, history, checkpoints, fork." },
  { name: "runs", description: "Execution attempts: start, read, follow the events, Stop." },
  { name: "messages", description: "Saved fragments of stopped answers." },
  { name: "operations", description: "Consequential operations: approve, reject, the ledger, confirm an unknown outcome." },
  { name: "agents", description: "The deployed agents a run may name, with their config schemas." },
  { name: "system", description: "Health and metrics (no API key)." },
] as const;

/** Serves the document at `/v1/openapi.json`; call it after every route is registered. */
export function registerOpenApiDocument(app: OpenAPIHono<AppEnv>): void {
  app.openAPIRegistry.registerComponent("securitySchemes", API_KEY_SCHEME, {
    type: "http",
    scheme: "bearer",
    description: "An API key of TIDEMARK_API_KEYS (`key:tenant`); the key selects the tenant. Without configured keys, none is needed.",
  });
  app.doc31("/v1/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "Tidemark",
      version: "0.1.0",
      description: "Agent runs whose Stop, disconnect and resume are honest.",
    },
    tags: [...OPENAPI_TAGS],
    security: [{ [API_KEY_SCHEME]: [] }],
  });
}
