/**
 * What Tidemark refuses in any JSON body, whatever its schema: text holding U+0000 (NUL), which
 * PostgreSQL cannot store (so a body is refused the same way on every store), and nesting deeper
 * than {@link MAX_JSON_DEPTH}, which would overflow the stack of whatever recurses over it later
 * (`JSON.stringify` of a 10 KB body 4,000 levels deep does). The walk itself never recurses.
 */

/** The deepest nesting of objects and arrays a body may have (`{}` is 1, `{"a": []}` is 2). */
export const MAX_JSON_DEPTH = 64;

/** Why a body is refused: where (as a schema issue's path, `a.b.0`; empty for the body itself) and what. */
export interface JsonBodyProblem {
  path: string;
  message: string;
}

interface Visit {
  value: unknown;
  /** Containers around the value. */
  depth: number;
  parent: Visit | undefined;
  key: string | number | undefined;
}

/** The first problem of `body` in document order, or undefined when it has none. */
export function checkJsonBody(body: unknown): JsonBodyProblem | undefined {
  const pending: Visit[] = [{ value: body, depth: 0, parent: undefined, key: undefined }];
  for (let visit = pending.pop(); visit !== undefined; visit = pending.pop()) {
    const { value } = visit;
    if (typeof value === "string") {
      if (value.includes("\u0000")) return { path: pathOf(visit), message: "must not contain the character U+0000 (NUL)" };
      continue;
    }
    if (value === null || typeof value !== "object") continue;
    const depth = visit.depth + 1;
    if (depth > MAX_JSON_DEPTH) {
      return { path: fieldOf(visit), message: `nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels` };
    }
    // Pushed in reverse so that they are visited in document order.
    if (Array.isArray(value)) {
      for (let index = value.length - 1; index >= 0; index--) pending.push({ value: value[index], depth, parent: visit, key: index });
      continue;
    }
    const entries = Object.entries(value);
    for (const [key] of entries) {
      if (key.includes("\u0000")) return { path: pathOf(visit), message: "has a key that contains the character U+0000 (NUL)" };
    }
    for (let index = entries.length - 1; index >= 0; index--) {
      const [key, child] = entries[index]!;
      pending.push({ value: child, depth, parent: visit, key });
    }
  }
  return undefined;
}

/** `a.b.0`, as the schema's issues spell a path. */
function pathOf(visit: Visit): string {
  return keysOf(visit).join(".");
}

/** The body's field that holds `visit` (its full path may be dozens of segments long); empty for an array body. */
function fieldOf(visit: Visit): string {
  const [first] = keysOf(visit);
  return typeof first === "string" ? first : "";
}

function keysOf(visit: Visit): (string | number)[] {
  const keys: (string | number)[] = [];
  for (let at: Visit | undefined = visit; at?.key !== undefined; at = at.parent) keys.push(at.key);
  return keys.reverse();
}
