/**
 * An id in a request path. The server only ever hands out well-formed ids (`thr_…`, `run_…`:
 * DESIGN §2), so an id that is not one names nothing, like an unknown id. Instead of being
 * refused, it is read as the empty id, which no resource has: every route then looks it up and
 * answers exactly as for an unknown id (the same 404, byte for byte, at the same point of the
 * request), on every store. PostgreSQL, for one, cannot even hold a NUL to compare with.
 */
import { z } from "@hono/zod-openapi";
import { isId, type IdPrefix } from "../core/index.js";

/** The id that no resource has: what a malformed path id is read as. */
export const NO_SUCH_ID = "";

/** A path parameter holding an id of `prefix`; a malformed one becomes {@link NO_SUCH_ID}. */
export function pathId(prefix: IdPrefix) {
  return z
    .string()
    .overwrite((value) => (isId(value, prefix) ? value : NO_SUCH_ID))
    .openapi({ example: `${prefix}_01jd8x0f1ae2rbv7c9ks0d8m5q` });
}
