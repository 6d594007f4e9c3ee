/** What every JSON body is checked for, whatever its schema: no NUL in its text, at most 64 levels deep. */
import { describe, expect, it } from "vitest";
import { checkJsonBody, MAX_JSON_DEPTH } from "./check-json-body.js";

/** `depth` arrays, one inside the other. */
function arrays(depth: number): unknown {
  let value: unknown = [];
  for (let level = 1; level < depth; level++) value = [value];
  return value;
}

describe("checkJsonBody", () => {
  it("accepts plain bodies, scalars and every other control character", () => {
    expect(checkJsonBody({ input: { role: "user", content: "tab\t \u0001 \u007f é 🌊" }, list: [1, null, true, "x"] })).toBeUndefined();
    for (const scalar of [null, 0, "", "text", false]) expect(checkJsonBody(scalar)).toBeUndefined();
  });

  it("finds a NUL in a value, with the path the schema's issues would give", () => {
    expect(checkJsonBody({ metadata: { list: ["ok", { deep: "a\u0000" }] } })).toEqual({
      path: "metadata.list.1.deep",
      message: "must not contain the character U+0000 (NUL)",
    });
    expect(checkJsonBody("\u0000")).toEqual({ path: "", message: "must not contain the character U+0000 (NUL)" });
  });

  it("finds a NUL in a key, naming the object that holds it", () => {
    expect(checkJsonBody({ metadata: { "a\u0000": 1 } })).toEqual({ path: "metadata", message: "has a key that contains the character U+0000 (NUL)" });
    expect(checkJsonBody({ "\u0000": 1 })?.path).toBe("");
  });

  it("reports the first problem in document order", () => {
    expect(checkJsonBody({ a: ["fine", "x\u0000"], b: "y\u0000" })?.path).toBe("a.1");
    expect(checkJsonBody([{ b: "\u0000" }, { a: "\u0000" }])?.path).toBe("0.b");
  });

  it(`accepts ${MAX_JSON_DEPTH} levels and refuses one more, naming the top-level field`, () => {
    expect(checkJsonBody(arrays(MAX_JSON_DEPTH))).toBeUndefined();
    expect(checkJsonBody({ metadata: arrays(MAX_JSON_DEPTH - 1) })).toBeUndefined();
    expect(checkJsonBody({ metadata: arrays(MAX_JSON_DEPTH) })).toEqual({
      path: "metadata",
      message: `nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`,
    });
    expect(checkJsonBody(arrays(MAX_JSON_DEPTH + 1))?.path).toBe("");
  });

  it("walks a million levels without recursion", () => {
    const deep = JSON.parse(`${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}`);

    expect(checkJsonBody({ metadata: deep })?.message).toContain("deeper than");
  });
});
