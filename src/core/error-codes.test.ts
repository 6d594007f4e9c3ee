import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ERROR_CODES } from "./error-codes.js";

describe("error codes", () => {
  const doc = readFileSync(new URL("../../docs/errors.md", import.meta.url), "utf8");

  it("are all listed, with their status, in the one table of docs/errors.md", () => {
    for (const [code, { status }] of Object.entries(ERROR_CODES)) {
      expect(doc).toContain(`| \`${code}\` | ${status} |`);
    }
  });

  it("are lower_snake_case and map to 4xx, except the four server-side ones", () => {
    for (const [code, { status }] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      const isServerSide = code === "internal_error" || code === "shutting_down" || code === "worker_unavailable" || code === "live_unavailable";
      if (!isServerSide) expect(status).toBeLessThan(500);
    }
  });
});
