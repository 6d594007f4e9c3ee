/**
 * No bare `throw new Error(…)` in the product (issue 13 item 5): an error a user or an operator
 * can meet is a typed one (a ConfigurationError, a TidemarkError with its code, a store or plan
 * error), and a programmer's assertion is a named InvariantError. Checked on every `npm test`,
 * like the layering.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

/** Every product file of `src` (tests excluded), relative to `src`. */
function productFiles(directory = SRC): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return productFiles(path);
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [relative(SRC, path)] : [];
  });
}

describe("errors in src", () => {
  it("throws no bare Error: every throw names its class", () => {
    const bare = productFiles().flatMap((file) =>
      readFileSync(join(SRC, file), "utf8")
        .split("\n")
        .flatMap((line, index) => (/\bthrow\s+new\s+Error\s*\(/.test(line) ? [`${file}:${index + 1}: ${line.trim()}`] : [])),
    );
    expect(bare).toEqual([]);
  });
});
