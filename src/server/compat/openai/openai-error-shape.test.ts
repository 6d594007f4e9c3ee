/** Native errors in OpenAI's shape, and response ids as run ids. */
import { describe, expect, it } from "vitest";
import { toOpenAiError } from "./openai-error-shape.js";
import { responseIdOf, runIdOf } from "./response-id.js";

describe("toOpenAiError", () => {
  it.each([
    [404, { error: "run_not_found", message: "No response.", param: "response_id" }, { message: "No response.", type: "invalid_request_error", param: "response_id", code: "run_not_found" }],
    [401, { error: "unauthorized", message: "Key." }, { message: "Key.", type: "authentication_error", param: null, code: "invalid_api_key" }],
    [400, { error: "invalid_request", message: "Bad.", issues: [{ path: "input.content", message: "x" }] }, { message: "Bad.", type: "invalid_request_error", param: "input.content", code: "invalid_request" }],
    [500, { error: "internal_error", message: "Oops." }, { message: "Oops.", type: "server_error", param: null, code: "internal_error" }],
  ])("%i %j", (status, native, expected) => {
    expect(toOpenAiError(status, native)).toEqual({ error: expected });
  });

  it("leaves a body that is not a native error alone", () => {
    expect(toOpenAiError(400, { error: { message: "already OpenAI's" } })).toBeUndefined();
    expect(toOpenAiError(400, "text")).toBeUndefined();
  });
});

describe("response ids", () => {
  it("are run ids under OpenAI's prefix, and a malformed one names no run", () => {
    expect(responseIdOf("run_01jd8x0f1ae2rbv7c9ks0d8m5q")).toBe("resp_01jd8x0f1ae2rbv7c9ks0d8m5q");
    expect(runIdOf("resp_01jd8x0f1ae2rbv7c9ks0d8m5q")).toBe("run_01jd8x0f1ae2rbv7c9ks0d8m5q");
    for (const malformed of ["resp_x", "run_01jd8x0f1ae2rbv7c9ks0d8m5q", "resp_01JD8X0F1AE2RBV7C9KS0D8M5Q", ""]) expect(runIdOf(malformed)).toBe("");
  });
});
