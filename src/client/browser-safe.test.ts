/**
 * `tidemark/client` must run in browsers: its modules may import one another, types from
 * src/core, and the browser-safe SSE reader; nothing that needs Node or the server.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const CLIENT_DIR = dirname(fileURLToPath(import.meta.url));
const SOURCES = readdirSync(CLIENT_DIR)
  .filter((name) => name.endsWith(".ts") && !name.endsWith(".test.ts"))
  .map((name) => ({ name, text: readFileSync(join(CLIENT_DIR, name), "utf8") }));

/** Every import or re-export: its specifier and whether it is type-only (erased at build). */
function importsOf(text: string): { specifier: string; isTypeOnly: boolean }[] {
  const found: { specifier: string; isTypeOnly: boolean }[] = [];
  for (const match of text.matchAll(/^\s*(import|export)\s+(type\s+)?(?:[^;"']*?\s+from\s+)?["']([^"']+)["']/gm)) {
    found.push({ specifier: match[3]!, isTypeOnly: match[2] !== undefined });
  }
  for (const match of text.matchAll(/\bimport\s*\(\s*["']([^"']+)["']\s*\)/g)) found.push({ specifier: match[1]!, isTypeOnly: false });
  return found;
}

/** Why `specifier` may not be imported this way from src/client, or undefined if it may. */
function violation(specifier: string, isTypeOnly: boolean): string | undefined {
  if (specifier.startsWith("node:")) return "a Node built-in";
  if (/^\.\/[\w-]+\.js$/.test(specifier)) return undefined;
  if (specifier === "../stream/read-sse.js") return undefined;
  if (/^\.\.\/core\/[\w-]+\.js$/.test(specifier)) return isTypeOnly ? undefined : "a value import from src/core (types only)";
  if (specifier.startsWith(".")) return "outside src/client (only src/core types and src/stream/read-sse.js)";
  // A package: only its types, so no bundler has to resolve it for the client.
  return isTypeOnly ? undefined : "a runtime import of a package";
}

describe("tidemark/client is browser-safe", () => {
  it("finds the client's modules and their imports", () => {
    expect(SOURCES.map((source) => source.name)).toEqual(expect.arrayContaining(["api-client.ts", "event-stream.ts", "chat-session.ts", "index.ts"]));
    expect(importsOf(`import type { A } from "../core/x.js";\nexport { b } from "./b.js";\nimport {\n  c,\n} from "node:fs";`)).toEqual([
      { specifier: "../core/x.js", isTypeOnly: true },
      { specifier: "./b.js", isTypeOnly: false },
      { specifier: "node:fs", isTypeOnly: false },
    ]);
  });

  it.each(SOURCES)("$name imports nothing that needs Node or the server", ({ text }) => {
    const problems = importsOf(text)
      .map(({ specifier, isTypeOnly }) => ({ specifier, why: violation(specifier, isTypeOnly) }))
      .filter((entry) => entry.why !== undefined);
    expect(problems).toEqual([]);
  });

  it.each(SOURCES)("$name uses no Node-only global", ({ text }) => {
    const code = text.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
    expect(code).not.toMatch(/\b(process\.|Buffer\b|require\(|__dirname|setImmediate\()/);
  });

  it("the SSE reader it imports is browser-safe too", () => {
    const reader = readFileSync(join(CLIENT_DIR, "../stream/read-sse.ts"), "utf8");
    expect(importsOf(reader).map((entry) => entry.specifier)).toEqual(["eventsource-parser"]);
  });
});
