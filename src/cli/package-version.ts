import { readFileSync } from "node:fs";

/** The version in Tidemark's package.json (two levels up from src/cli and from dist/cli alike). */
export function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: unknown };
  return typeof manifest.version === "string" ? manifest.version : "unknown";
}
