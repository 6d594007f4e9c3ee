import { describe, expect, it } from "vitest";
import type { MessageFormat, PublicationStatus } from "./records.js";
import { isUsableForExecution, notUsableReason } from "./usable-for-execution.js";

describe("what may be a tool's or a step's input", () => {
  it.each<[PublicationStatus, MessageFormat, boolean, string | undefined]>([
    ["published", "json", true, undefined],
    ["published", "json", false, undefined],
    ["published", "text", false, undefined],
    ["published", "text", true, "not_an_object"],
    ["fragment", "json", true, "fragment"],
    ["fragment", "json", false, "fragment"],
    ["fragment", "text", false, "fragment"],
    ["deleted", "json", true, "deleted"],
    ["deleted", "text", false, "deleted"],
  ])("%s %s (as an object: %s) → %s", (publicationStatus, format, asObject, reason) => {
    expect(notUsableReason({ publicationStatus, format }, asObject)).toBe(reason);
  });

  it("the wire's usable_for_execution: a published message only", () => {
    expect(isUsableForExecution({ publicationStatus: "published", format: "json" })).toBe(true);
    expect(isUsableForExecution({ publicationStatus: "fragment", format: "json" })).toBe(false);
    expect(isUsableForExecution({ publicationStatus: "fragment", format: "text" })).toBe(false);
  });
});
