import { typeid, TypeID } from "typeid-js";

/** The id prefixes Tidemark hands out (DESIGN §2). */
export type IdPrefix = "thr" | "run" | "cp" | "msg" | "op" | "trc";

/** A new prefixed, time-sortable id such as `run_01j…`. */
export function createId(prefix: IdPrefix): string {
  return typeid(prefix).toString();
}

/** Whether `value` is a well-formed id with `prefix` (client-named runs must be). */
export function isId(value: string, prefix: IdPrefix): boolean {
  if (value.length > 100 || !value.startsWith(`${prefix}_`)) return false;
  try {
    return TypeID.fromString(value).getType() === prefix;
  } catch {
    return false;
  }
}
