/**
 * The layering of `src`, checked on every `npm test`: no import circle between product files
 * (type imports included), `core` imports nothing of its own but `core`, each database library is
 * imported only by its store, and the client imports no server, runtime or store code. Also
 * the split between runtime and server: the server writes no transition of its own (every one
 * goes through the runtime, with its clock), and the runtime builds no HTTP URL.
 */
import { readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { productFiles, SRC } from "./support/product-files.js";


/** The module specifiers a file names: `import … from`, `export … from`, `import(…)`, type-only ones too. */
function specifiers(source: string): string[] {
  const found: string[] = [];
  const pattern = /(?:^|[\s;])(?:import|export)\s[^'"]*?\sfrom\s*["']([^"']+)["']|(?:^|[\s;(])import\s*\(\s*["']([^"']+)["']\s*\)|^import\s*["']([^"']+)["']/gm;
  for (const match of source.matchAll(pattern)) found.push((match[1] ?? match[2] ?? match[3])!);
  return found;
}

interface Edge {
  from: string;
  specifier: string;
  /** The product file a relative specifier names (relative to `src`), or undefined for a package. */
  to: string | undefined;
}

const files = productFiles();
const edges: Edge[] = files.flatMap((file) =>
  specifiers(readFileSync(join(SRC, file), "utf8")).map((specifier) => ({
    from: file,
    specifier,
    to: specifier.startsWith(".") ? relative(SRC, resolve(SRC, dirname(file), specifier)).replace(/\.js$/, ".ts") : undefined,
  })),
);

/** The import circles among `files` (strongly connected components of more than one file, or a self-import). */
function circles(): string[][] {
  const next = new Map<string, string[]>(files.map((file) => [file, []]));
  for (const edge of edges) if (edge.to !== undefined && next.has(edge.to)) next.get(edge.from)!.push(edge.to);
  // Tarjan's algorithm, iterative so a deep graph cannot overflow the stack.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  for (const start of files) {
    if (index.has(start)) continue;
    const work: { file: string; child: number }[] = [{ file: start, child: 0 }];
    index.set(start, counter);
    low.set(start, counter++);
    stack.push(start);
    onStack.add(start);
    while (work.length > 0) {
      const frame = work.at(-1)!;
      const children = next.get(frame.file)!;
      if (frame.child < children.length) {
        const child = children[frame.child++]!;
        if (!index.has(child)) {
          index.set(child, counter);
          low.set(child, counter++);
          stack.push(child);
          onStack.add(child);
          work.push({ file: child, child: 0 });
        } else if (onStack.has(child)) {
          low.set(frame.file, Math.min(low.get(frame.file)!, index.get(child)!));
        }
        continue;
      }
      work.pop();
      const parent = work.at(-1);
      if (parent) low.set(parent.file, Math.min(low.get(parent.file)!, low.get(frame.file)!));
      if (low.get(frame.file) !== index.get(frame.file)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.file);
      if (component.length > 1 || children.includes(frame.file)) found.push(component.sort());
    }
  }
  return found;
}

/** The edges that break a rule: "<from> imports <specifier>". */
const violations = (isForbidden: (edge: Edge) => boolean): string[] =>
  edges.filter(isForbidden).map((edge) => `${edge.from} imports ${edge.specifier}`);

const isIn = (path: string | undefined, folder: string): boolean => path !== undefined && (path === folder || path.startsWith(`${folder}/`));
const isPackage = (edge: Edge, name: string): boolean => edge.to === undefined && (edge.specifier === name || edge.specifier.startsWith(`${name}/`));

describe("the layering of src", () => {
  it("finds the imports it checks", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(edges.some((edge) => edge.from === "store/postgres/pg-driver.ts" && edge.specifier === "pg")).toBe(true);
    expect(edges.some((edge) => edge.from === "runtime/runtime.ts" && edge.to === "core/index.ts")).toBe(true);
  });

  it("has no import circle, type imports included", () => {
    expect(circles()).toEqual([]);
  });

  it("core imports nothing of the product outside core", () => {
    expect(violations((edge) => isIn(edge.from, "core") && edge.to !== undefined && !isIn(edge.to, "core"))).toEqual([]);
  });

  it("only the PostgreSQL store imports pg, and only the SQLite store imports better-sqlite3", () => {
    expect(violations((edge) => isPackage(edge, "pg") && !isIn(edge.from, "store/postgres"))).toEqual([]);
    expect(violations((edge) => isPackage(edge, "better-sqlite3") && !isIn(edge.from, "store/sqlite"))).toEqual([]);
  });

  it("the client imports no server, runtime or store code", () => {
    const isBackend = (edge: Edge): boolean => ["server", "runtime", "store", "models", "tools", "cli", "check"].some((folder) => isIn(edge.to, folder));
    expect(violations((edge) => isIn(edge.from, "client") && isBackend(edge))).toEqual([]);
  });

  it("nothing lower imports the runtime, the server or the CLI", () => {
    // The PostgreSQL cluster adapter implements the runtime's Cluster port: the one edge up, to the port only.
    const isPort = (edge: Edge): boolean => isIn(edge.from, "store/postgres/cluster") && edge.to === "runtime/cluster.ts";
    const lower = ["core", "store", "stream", "models", "tools", "client"];
    const higher = ["runtime", "server", "cli", "check"];
    expect(
      violations((edge) => lower.some((folder) => isIn(edge.from, folder)) && higher.some((folder) => isIn(edge.to, folder)) && !isPort(edge)),
    ).toEqual([]);
  });

  it("the server writes no transition and reads no clock of its own; the runtime builds no URL", () => {
    const source = (file: string): string => readFileSync(join(SRC, file), "utf8");
    // Reads through `runtime.store` are fine; a write (a transition of a thread or run) is the runtime's.
    const writes = /runtime\.store\.(create|save|delete|fork|finish|transition|request|claim|admit|rename|append|confirm|mark|abandon|prepare|commit)\w*\(/;
    const serverWrites = files.filter((file) => isIn(file, "server") && writes.test(source(file)));
    expect(serverWrites).toEqual([]);
    expect(files.filter((file) => isIn(file, "server") && /\bsystemClock\b|Date\.now\(\)/.test(source(file)))).toEqual([]);
    expect(files.filter((file) => isIn(file, "runtime") && /["'`]\/v1\//.test(source(file)))).toEqual([]);
  });
});
