import type { HttpBindings } from "@hono/node-server";

/** The Hono environment of the server: Node's request/response and the authenticated tenant. */
export interface AppEnv {
  Bindings: HttpBindings;
  Variables: { tenantId: string };
}
