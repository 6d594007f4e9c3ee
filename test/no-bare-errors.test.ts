/**
 * No bare `throw new Error(…)` in the product (issue 13 item 5): an error a user or an operator
 * can meet is a typed one (a ConfigurationError, a TidemarkError with its code, a store or plan
 * error), and a programmer's assertion is a named InvariantError. Checked on every `npm test`,
 * like the layering.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { productFiles, SRC } from "./support/product-files.js";


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
