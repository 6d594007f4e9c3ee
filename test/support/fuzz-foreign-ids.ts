/**
 * The other tenant's ids in a drawn request: a foreign id must answer exactly as an unknown one
 * (DESIGN §8), so the fuzz sends each request that refers to one again with unknown ids instead.
 */
import type { RequestSpec } from "./fuzz-requests.js";
import { Deep, Huge, IdRef } from "./fuzz-values.js";

const isForeignReference = (ref: IdRef): boolean => ref.choice.kind === "foreign" && ref.of !== "agent" && !ref.isName;

/** The foreign ids in `value`, names included. */
function foreignIdsIn(value: unknown, found: IdRef[] = []): IdRef[] {
  if (value instanceof IdRef) {
    if (value.choice.kind === "foreign" && value.of !== "agent") found.push(value);
  } else if (Array.isArray(value)) value.forEach((item) => foreignIdsIn(item, found));
  else if (typeof value === "object" && value !== null && !(value instanceof Huge) && !(value instanceof Deep)) Object.values(value).forEach((item) => foreignIdsIn(item, found));
  return found;
}

/** Every foreign id `spec` holds, in its path or anywhere in its body. */
export function foreignIds(spec: RequestSpec): IdRef[] {
  return foreignIdsIn([Object.values(spec.params), spec.body.mode === "json" ? spec.body.value : null]);
}

/**
 * The foreign ids `spec` refers to: in its path, and in a body valid but for its ids. Each must
 * answer exactly as an unknown id would.
 */
export function foreignRefs(spec: RequestSpec): IdRef[] {
  const refs = Object.values(spec.params).filter(isForeignReference);
  if (!spec.isBodyValid || spec.body.mode !== "json") return refs;
  return [...refs, ...foreignIdsIn(spec.body.value).filter(isForeignReference)];
}

/** `spec` with every foreign id in it replaced by an unknown id of its kind (`suffix` numbered). */
export function withUnknownInsteadOfForeign(spec: RequestSpec, suffixes: (index: number) => string): RequestSpec {
  let index = 0;
  const swap = (value: unknown): unknown => {
    if (value instanceof IdRef) return isForeignReference(value) ? new IdRef(value.of, { kind: "unknown", suffix: suffixes(index++) }) : value;
    if (Array.isArray(value)) return value.map(swap);
    if (typeof value === "object" && value !== null && !(value instanceof Huge) && !(value instanceof Deep)) {
      return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, swap(item)]));
    }
    return value;
  };
  const params = Object.fromEntries(Object.entries(spec.params).map(([name, ref]) => [name, swap(ref) as IdRef]));
  const body = spec.body.mode === "json" && spec.isBodyValid ? { ...spec.body, value: swap(spec.body.value) } : spec.body;
  return { ...spec, params, body };
}
