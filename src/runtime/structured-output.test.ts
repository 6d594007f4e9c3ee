import { describe, expect, it } from "vitest";
import { z } from "zod";
import { demoObject, demoObjectChunks } from "../models/demo-object.js";
import { parseStructuredOutput, responseFormatFor } from "./structured-output.js";
import { StructuredOutputError } from "./structured-output-error.js";

const plan = z.strictObject({
  goal: z.string().min(1),
  steps: z.array(z.strictObject({ title: z.string(), minutes: z.number().int().positive() })).min(1),
});
const PLAN_TEXT = JSON.stringify({ goal: "move house", steps: [{ title: "pack", minutes: 90 }, { title: "drive", minutes: 40 }] });

/** What parsing `text` threw: a StructuredOutputError, or the test fails. */
function refusal(text: string): StructuredOutputError {
  let caught: unknown;
  try {
    parseStructuredOutput(text, plan);
  } catch (error) {
    caught = error;
  }
  expect(StructuredOutputError.isInstance(caught), JSON.stringify(text)).toBe(true);
  return caught as StructuredOutputError;
}

describe("parseStructuredOutput", () => {
  it("returns the object of a complete, valid text", () => {
    expect(parseStructuredOutput(PLAN_TEXT, plan)).toEqual(JSON.parse(PLAN_TEXT));
  });

  it("refuses every proper prefix of a valid object: none is the object, even one that parses", () => {
    for (let end = 0; end < PLAN_TEXT.length; end++) {
      const error = refusal(PLAN_TEXT.slice(0, end));
      expect(error.code, `prefix of ${end}`).toBe("invalid_structured_output");
      expect(error.message).toMatch(/^invalid_structured_output: /);
    }
  });

  it("names the paths of a wrong shape, never the values", () => {
    const error = refusal(JSON.stringify({ goal: "secret goal", steps: [{ title: "pack", minutes: "soon" }] }));
    expect(error.problem).toBe("schema_mismatch");
    expect(error.issues.map((issue) => issue.path)).toEqual(["steps.0.minutes"]);
    expect(error.message).not.toContain("secret goal");
    expect(error.message).not.toContain("soon");
  });

  it("says not_json for prose or a cut-off object", () => {
    expect(refusal("Here is your plan").problem).toBe("not_json");
    expect(refusal('{"goal": "move').problem).toBe("not_json");
  });
});

describe("the demo model's object", () => {
  it("validates against the schema it was asked for, and its pieces join to it", () => {
    const format = responseFormatFor(plan, "plan");
    const value = demoObject(format.schema);
    expect(plan.safeParse(value).success).toBe(true);
    expect(demoObjectChunks(value).join("")).toBe(JSON.stringify(value));
    expect(demoObjectChunks(value).length).toBeGreaterThan(5);
  });
});
