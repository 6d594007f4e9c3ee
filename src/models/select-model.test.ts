import { describe, expect, it } from "vitest";
import { selectModel } from "./select-model.js";

describe("selectModel", () => {
  it("builds each kind of model from its --model name and the environment", () => {
    expect(selectModel("demo", {}).id).toBe("demo");
    expect(selectModel("openai-compatible:llama3.1", { TIDEMARK_OPENAI_BASE_URL: "http://127.0.0.1:11434/v1" }).id).toBe(
      "openai-compatible:llama3.1",
    );
    expect(selectModel("openai:gpt-4o-mini", { OPENAI_API_KEY: "sk-x" }).id).toBe("openai:gpt-4o-mini");
    expect(selectModel("anthropic:claude-sonnet-4-5", { ANTHROPIC_API_KEY: "sk-y" }).id).toBe("anthropic:claude-sonnet-4-5");
  });

  it("explains what is missing or unknown", () => {
    expect(() => selectModel("openai-compatible:x", {})).toThrow(/TIDEMARK_OPENAI_BASE_URL/);
    expect(() => selectModel("openai-compatible:", { TIDEMARK_OPENAI_BASE_URL: "http://x" })).toThrow(/name the model/);
    expect(() => selectModel("gpt-4", {})).toThrow(/Unknown model "gpt-4"/);
    expect(() => selectModel("mistral:large", {})).toThrow(/Unknown model/);
  });

  it("configures the demo model's pace from the environment", async () => {
    const model = selectModel("demo", { TIDEMARK_DEMO_WORDS_PER_SECOND: "0", TIDEMARK_DEMO_WORDS: "5" });
    const parts = [];
    for await (const part of model.stream({ messages: [{ role: "user", content: "hi" }] }, { signal: new AbortController().signal })) {
      parts.push(part);
    }
    expect(parts.at(-1)).toMatchObject({ type: "finish", usage: { outputTokens: expect.any(Number) } });
  });
});
