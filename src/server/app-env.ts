import type { HttpBindings } from "@hono/node-server";

/** The Hono environment of the server: Node's request/response and the authenticated tenant. */
export interface AppEnv {
  Bindings: HttpBindings;
  /** `errorCode`: the stable code of an error answer, counted by the rejected-requests metric. */
  Variables: { tenantId: string; errorCode?: string };
}
