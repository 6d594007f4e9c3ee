/**
 * The LangGraph Agent Server subset under `/langgraph` (DESIGN §17), enough for
 * `@langchain/langgraph-sdk`'s `Client` and `useStream`: a translation onto the runtime's own
 * threads, runs, events and cancel, with the same tenants, and errors in the Agent Server's shape.
 *
 * @example
 * ```ts
 * const client = new Client({ apiUrl: "http://localhost:8787/langgraph", defaultHeaders: { authorization: "Bearer <key>" } });
 * ```
 */
import { Hono } from "hono";
import { silentLogger, type Logger, type Runtime } from "../../../runtime/index.js";
import type { AppEnv } from "../../app-env.js";
import { registerLangGraphAssistantRoutes } from "./assistant-routes.js";
import { createLangGraphAuth } from "./langgraph-auth.js";
import { createLangGraphErrorHandler, langGraphErrorResponse } from "./langgraph-error.js";
import { registerLangGraphRunRoutes } from "./run-routes.js";
import { registerLangGraphThreadRoutes } from "./thread-routes.js";
import { limitBody } from "../../limit-body.js";

/** What the LangGraph layer takes from the server's options. */
export interface LangGraphRouteOptions {
  runtime: Runtime;
  apiKeys?: ReadonlyMap<string, string>;
  maxBodyBytes?: number;
  heartbeatMs?: number;
  logger?: Logger;
}

/** Mounts the LangGraph layer at `/langgraph` on `app`. */
export function registerLangGraphRoutes(app: Hono<AppEnv>, options: LangGraphRouteOptions): void {
  const logger = options.logger ?? silentLogger;
  const langgraph = new Hono<AppEnv>();
  langgraph.use(
    "*",
    limitBody({
      maxSize: options.maxBodyBytes ?? 1024 * 1024,
      onError: (c) => {
        // The rest of the body is not read, so this connection cannot carry another request.
        c.header("connection", "close");
        return langGraphErrorResponse(c, 413, "payload_too_large", "The request body is too large.");
      },
    }),
  );
  langgraph.use("*", createLangGraphAuth(options.apiKeys ?? new Map()));
  registerLangGraphThreadRoutes(langgraph, options.runtime);
  registerLangGraphRunRoutes(langgraph, options.runtime, { logger, heartbeatMs: options.heartbeatMs });
  registerLangGraphAssistantRoutes(langgraph, options.runtime);
  langgraph.all("*", (c) => langGraphErrorResponse(c, 404, "not_found", "Tidemark's LangGraph layer has no such route."));
  langgraph.onError(createLangGraphErrorHandler(logger));
  app.route("/langgraph", langgraph);
}
