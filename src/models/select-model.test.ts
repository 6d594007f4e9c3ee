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

  it("refuses a provider without its API key, naming the setting", () => {
    expect(() => selectModel("openai:gpt-4o-mini", {})).toThrow("--model openai:gpt-4o-mini needs an API key: set OPENAI_API_KEY (or TIDEMARK_OPENAI_API_KEY).");
    expect(() => selectModel("openai:gpt-4o-mini", { OPENAI_API_KEY: "  ", TIDEMARK_OPENAI_API_KEY: "" })).toThrow(/needs an API key/);
    expect(() => selectModel("anthropic:claude-sonnet-4-5", { OPENAI_API_KEY: "sk-x" })).toThrow(
      "--model anthropic:claude-sonnet-4-5 needs an API key: set ANTHROPIC_API_KEY (or TIDEMARK_ANTHROPIC_API_KEY).",
    );
    expect(selectModel("openai:gpt-4o-mini", { TIDEMARK_OPENAI_API_KEY: "sk-t" }).id).toBe("openai:gpt-4o-mini");
    expect(selectModel("anthropic:claude-sonnet-4-5", { TIDEMARK_ANTHROPIC_API_KEY: "sk-t" }).id).toBe("anthropic:claude-sonnet-4-5");
  });

  it("refuses an address that is not an http(s) URL without repeating it", () => {
    const secret = "localhost:11434/v1?token=hunter2";
    for (const env of [
      { TIDEMARK_OPENAI_BASE_URL: secret },
      { TIDEMARK_OPENAI_BASE_URL: "http://127.0.0.1:11434/v1", TIDEMARK_PROVIDER_CANCEL_URL: secret },
    ]) {
      let message = "";
      try {
        selectModel("openai-compatible:llama3.1", env);
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/must be an http:\/\/ or https:\/\/ URL/);
      expect(message).not.toContain("hunter2");
    }
  });

  it("refuses a demo pace that is not a number", () => {
    expect(() => selectModel("demo", { TIDEMARK_DEMO_WORDS_PER_SECOND: "fast" })).toThrow("TIDEMARK_DEMO_WORDS_PER_SECOND must be a number of at least 0.");
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
