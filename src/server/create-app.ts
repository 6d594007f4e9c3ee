import { OpenAPIHono } from "@hono/zod-openapi";
import type { Runtime } from "../runtime/index.js";
import { redactLogger, silentLogger, type Logger } from "../runtime/index.js";
import type { AppEnv } from "./app-env.js";
import { registerLangGraphRoutes } from "./compat/langgraph/register-langgraph-routes.js";
import { createAuthMiddleware } from "./auth.js";
import { createErrorHandler, errorResponse, invalidRequestResponse } from "./errors.js";
import { jsonBodyGuard } from "./json-body-guard.js";
import type { ServerMetrics } from "./metrics.js";
import { registerOpenApiDocument } from "./openapi-document.js";
import { registerAgentRoutes } from "./routes/agents.js";
import { registerMessageRoutes } from "./routes/messages.js";
import { registerOperationRoutes } from "./routes/operations.js";
import { registerRollbackRoute } from "./routes/rollback.js";
import { registerRunRoutes, type RunRouteOptions } from "./routes/runs.js";
import { registerSystemRoutes } from "./routes/system.js";
import { registerThreadRoutes } from "./routes/threads.js";
import { CANCEL_PATH, createStopAtRequest } from "./stop-at-request.js";
import { createRateLimit, DEFAULT_RATE_LIMIT, type RateLimitOptions } from "./rate-limit.js";
import { registerWebApp } from "./web-app.js";
import { OPENAI_PATHS, registerOpenAiCompat } from "./compat/openai/openai-routes.js";
import { openAiErrorShape } from "./compat/openai/openai-error-shape.js";
import { langGraphErrorShape } from "./compat/langgraph/langgraph-error.js";
import { registerAgUiRoutes } from "./compat/ag-ui/register-ag-ui-routes.js";
import { limitBody } from "./limit-body.js";

/** Options for {@link createApp}. */
export interface AppOptions extends RunRouteOptions {
  runtime: Runtime;
  metrics: ServerMetrics;
  /** API key → tenant; empty means one local tenant without authentication. */
  apiKeys?: ReadonlyMap<string, string>;
  /** Largest accepted request body in bytes (default 1 MiB). */
  maxBodyBytes?: number;
  logger?: Logger;
  /** Each tenant's request rate (default {@link DEFAULT_RATE_LIMIT}). */
  rateLimit?: RateLimitOptions;
  /** The built web app's directory (`tidemark serve` uses `dist/web`), served at `/`; none when left out. */
  webRoot?: string;
}

/** The HTTP API (and, with `webRoot`, the web app) as a Hono app (mount it anywhere, or serve it with {@link startServer}). */
export function createApp(given: AppOptions): OpenAPIHono<AppEnv> {
  // The server's lines pass through the runtime's redactor too (once: a logger it already redacts is kept).
  const logger = redactLogger(given.logger ?? silentLogger, given.runtime.redactor);
  const options: AppOptions = { ...given, logger };
  const app = new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (!result.success) {
        return invalidRequestResponse(
          c,
          result.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message })),
        );
      }
    },
  });
  options.metrics.trackActiveRuns(() => options.runtime.activeRunCount);
  options.metrics.trackQueuedRuns(() => options.runtime.store.countQueuedRuns());
  // First: every error answer of every layer is counted by its code, once its handler is done.
  app.use("*", async (c, next) => {
    await next();
    const code = c.get("errorCode");
    if (code) options.metrics.requestsRejected.inc({ code });
  });
  // The compatibility layers' errors leave in their own shapes, the shared rate limit's refusals
  // included: so these wrap everything after them (AG-UI answers in the native shape).
  for (const path of OPENAI_PATHS) app.use(path, openAiErrorShape);
  app.use("/langgraph/*", langGraphErrorShape);
  // A Stop aborts its run before anything else reads its request (the rate limit included).
  if (options.runtime.role !== "worker") app.use(CANCEL_PATH, createStopAtRequest(options.runtime, options.apiKeys ?? new Map()));
  // Every layer's routes (the native API, OpenAI's, LangGraph's, AG-UI's), before their auth.
  const limitRate = createRateLimit(options.apiKeys ?? new Map(), options.rateLimit ?? DEFAULT_RATE_LIMIT);
  for (const path of ["/v1/*", "/langgraph/*", "/ag-ui", "/ag-ui/*"]) app.use(path, limitRate);
  if (options.runtime.role !== "worker") registerOpenAiCompat(app, options);

  app.use(
    "/v1/*",
    limitBody({
      maxSize: options.maxBodyBytes ?? 1024 * 1024,
      onError: (c) => {
        // The rest of the body is not read, so this connection cannot carry another request.
        c.header("connection", "close");
        return errorResponse(c, "payload_too_large", "The request body is too large.");
      },
    }),
  );
  app.use("/v1/*", createAuthMiddleware(options.apiKeys ?? new Map()));
  app.use("/v1/*", jsonBodyGuard);
  // A worker serves only its health and metrics: clients talk to the API processes.
  if (options.runtime.role !== "worker") {
    registerThreadRoutes(app, options.runtime);
    registerRunRoutes(app, options.runtime, options.metrics, options);
    registerRollbackRoute(app, options.runtime);
    registerOperationRoutes(app, options.runtime);
    registerMessageRoutes(app, options.runtime);
    registerAgentRoutes(app, options.runtime);
    registerLangGraphRoutes(app, { ...options, logger });
    registerAgUiRoutes(app, options.runtime, { ...options, logger });
  }
  registerSystemRoutes(app, options.runtime, options.metrics);
  registerOpenApiDocument(app);
  // After every API route, so that the API keeps precedence; a worker serves no app.
  if (options.webRoot !== undefined && options.runtime.role !== "worker") registerWebApp(app, options.webRoot);
  app.notFound((c) => errorResponse(c, "not_found", "No such route."));
  app.onError(createErrorHandler(logger));
  return app;
}
