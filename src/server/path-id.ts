/**
 * An id in a request path. Ids are made by the server (`thr_…`, `cp_…`: DESIGN §2) or, for runs,
 * by clients under the same rule, so an id that is not well-formed names nothing, like an
 * unknown id. Instead of being refused, it is read as the empty id, which no resource has: every
 * route then looks it up and answers exactly as for an unknown id (the same 404, byte for byte,
 * at the same point of the request), on every store. PostgreSQL, for one, cannot even hold a
 * NUL to compare with.
 */
import { z } from "@hono/zod-openapi";
import type { IdPrefix } from "../core/index.js";

/** The id that no resource has: what a malformed path id is read as. */
export const NO_SUCH_ID = "";

/** Whether `value` is an id of `prefix` as ids are made: `run_` then 26 lower-case letters and digits. */
export function isWellFormedId(value: string, prefix: IdPrefix): boolean {
  return value.length === prefix.length + 27 && value.startsWith(`${prefix}_`) && /^[0-9a-z]{26}$/.test(value.slice(prefix.length + 1));
}

/** A path parameter holding an id of `prefix`; a malformed one becomes {@link NO_SUCH_ID}. */
export function pathId(prefix: IdPrefix) {
  return z
    .string()
    .overwrite((value) => (isWellFormedId(value, prefix) ? value : NO_SUCH_ID))
    .openapi({ example: `${prefix}_01jd8x0f1ae2rbv7c9ks0d8m5q` });
}
