import type { Context } from "hono";
import type { IdPrefix } from "../../../core/index.js";
import { isWellFormedId, NO_SUCH_ID } from "../../path-id.js";

/**
 * A path id of `prefix`; one that is not well-formed names nothing and reads as the empty id, so
 * it is answered exactly as an unknown id (a 404), as on the native API.
 */
export function pathIdOf(c: Context, name: string, prefix: IdPrefix): string {
  const value = c.req.param(name) ?? "";
  return isWellFormedId(value, prefix) ? value : NO_SUCH_ID;
}

/** Where a run is, as `Content-Location` names it (the SDK reads the run id from it; its apiUrl comes first). */
export const runPath = (threadId: string, runId: string): string => `/threads/${threadId}/runs/${runId}`;
