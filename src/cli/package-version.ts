import { existsSync, readFileSync } from "node:fs";

/**
 * The version in Tidemark's package.json: the nearest one above this module (two levels up from
 * src/cli and dist/cli, three from the benchmarks' dist-bench/src/cli).
 */
export function packageVersion(): string {
  for (let up = "../../"; up.length <= "../../../".length; up += "../") {
    const path = new URL(`${up}package.json`, import.meta.url);
    if (!existsSync(path)) continue;
    const manifest = JSON.parse(readFileSync(path, "utf8")) as { version?: unknown };
    return typeof manifest.version === "string" ? manifest.version : "unknown";
  }
  return "unknown";
}
