import { describe, expect, it } from "vitest";
import { ConfigurationError } from "../core/index.js";
import { redactorFromEnvironment } from "./redaction-settings.js";

const TEXT = "ann@example.org paid with 4111 1111 1111 1111 for ACME-123456";

describe("redactorFromEnvironment", () => {
  it("unset or default: emails and card numbers", () => {
    for (const env of [{}, { TIDEMARK_REDACT: "" }, { TIDEMARK_REDACT: " Default " }]) {
      expect(redactorFromEnvironment(env)(TEXT)).toBe("***@example.org paid with [card …1111] for ACME-123456");
    }
  });

  it("off, or a list of the built-in rules", () => {
    expect(redactorFromEnvironment({ TIDEMARK_REDACT: "off" })(TEXT)).toBe(TEXT);
    expect(redactorFromEnvironment({ TIDEMARK_REDACT: "card" })(TEXT)).toBe("ann@example.org paid with [card …1111] for ACME-123456");
    expect(redactorFromEnvironment({ TIDEMARK_REDACT: "email, card" })(TEXT)).toBe("***@example.org paid with [card …1111] for ACME-123456");
  });

  it("extra patterns, as sources or /literals/ with flags, apply whatever TIDEMARK_REDACT says", () => {
    const env = { TIDEMARK_REDACT: "off", TIDEMARK_REDACT_PATTERNS: JSON.stringify(["ACME-\\d{6}", "/PAID WITH/i"]) };
    expect(redactorFromEnvironment(env)(TEXT)).toBe("ann@example.org [redacted] 4111 1111 1111 1111 for [redacted]");
  });

  it("refuses a setting that cannot work, naming it and never echoing its value", () => {
    const refused = (env: NodeJS.ProcessEnv) => {
      try {
        redactorFromEnvironment(env);
      } catch (error) {
        expect(ConfigurationError.isInstance(error)).toBe(true);
        return error as ConfigurationError;
      }
      throw new Error("not refused");
    };
    expect(refused({ TIDEMARK_REDACT: "emails,s3cret" }).setting).toBe("TIDEMARK_REDACT");
    expect(refused({ TIDEMARK_REDACT: "emails,s3cret" }).message).not.toContain("s3cret");
    for (const patterns of ["ACME-\\d", "[1]", '["("]', '[""]', '{"a":1}']) {
      const error = refused({ TIDEMARK_REDACT_PATTERNS: patterns });
      expect(error.setting).toBe("TIDEMARK_REDACT_PATTERNS");
      expect(error.message).toMatch(/^TIDEMARK_REDACT_PATTERNS must be a JSON array of regular expressions/);
    }
  });
});
