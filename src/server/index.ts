export { createApp, type AppOptions } from "./create-app.js";
export { startServer, type RunningServer, type ServerTimeouts } from "./start-server.js";
export { DEFAULT_RATE_LIMIT, type RateLimitOptions } from "./rate-limit.js";
export { createServerMetrics, type ServerMetrics } from "./metrics.js";
export { parseApiKeys, LOCAL_TENANT } from "./auth.js";
export type { AppEnv } from "./app-env.js";
export { DEFAULT_WEB_ROOT } from "./web-app.js";
