import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createDemoModel } from "../runtime/demo-model.js";
import type { ChatModel } from "../runtime/model.js";
import { fromAISDKModel } from "./ai-sdk-model.js";
import { createOpenAICompatibleModel } from "./openai-compatible-model.js";
import type { ProviderCancelOptions } from "./provider-cancel.js";
import { withRetries } from "./with-retries.js";

/** The model names `tidemark serve --model` understands. */
export const MODEL_SPECS = ["demo", "openai-compatible:<model>", "openai:<model>", "anthropic:<model>"] as const;

/**
 * The model for a `--model` / `TIDEMARK_MODEL` value, configured from the environment:
 * - `demo`: the built-in demo model (`TIDEMARK_DEMO_WORDS_PER_SECOND`, `TIDEMARK_DEMO_WORDS`);
 * - `openai-compatible:<model>`: the lean reader, at `TIDEMARK_OPENAI_BASE_URL` with
 *   `TIDEMARK_OPENAI_API_KEY` (vLLM, Ollama, LM Studio, llama.cpp, OpenAI);
 * - `openai:<model>` / `anthropic:<model>`: the AI SDK's own providers (`OPENAI_API_KEY`,
 *   `ANTHROPIC_API_KEY`, or `TIDEMARK_OPENAI_API_KEY` / `TIDEMARK_ANTHROPIC_API_KEY`).
 * `TIDEMARK_PROVIDER_CANCEL_URL` adds an explicit cancel call to any of the last three.
 * Real models retry retryable failures before their first token.
 */
export function selectModel(spec: string, env: Record<string, string | undefined> = process.env, onBackgroundError?: (error: unknown) => void): ChatModel {
  const number = (name: string): number | undefined => (env[name] ? Number(env[name]) : undefined);
  if (spec === "demo") {
    return createDemoModel({ wordsPerSecond: number("TIDEMARK_DEMO_WORDS_PER_SECOND"), wordCount: number("TIDEMARK_DEMO_WORDS") });
  }
  const separator = spec.indexOf(":");
  const provider = separator > 0 ? spec.slice(0, separator) : "";
  const name = spec.slice(separator + 1);
  if (!name) throw new Error(`--model ${spec}: name the model, e.g. ${provider || "openai-compatible"}:llama3.1`);
  const cancel: ProviderCancelOptions | undefined = env.TIDEMARK_PROVIDER_CANCEL_URL
    ? { url: env.TIDEMARK_PROVIDER_CANCEL_URL, tokenHeader: env.TIDEMARK_PROVIDER_CANCEL_HEADER }
    : undefined;
  switch (provider) {
    case "openai-compatible": {
      const baseURL = env.TIDEMARK_OPENAI_BASE_URL;
      if (!baseURL) throw new Error("--model openai-compatible:… needs TIDEMARK_OPENAI_BASE_URL (e.g. http://127.0.0.1:11434/v1).");
      return withRetries(createOpenAICompatibleModel({ model: name, baseURL, apiKey: env.TIDEMARK_OPENAI_API_KEY, cancel, onBackgroundError }));
    }
    case "openai": {
      const openai = createOpenAI({ apiKey: env.TIDEMARK_OPENAI_API_KEY ?? env.OPENAI_API_KEY, baseURL: env.TIDEMARK_OPENAI_BASE_URL });
      return withRetries(fromAISDKModel(openai.chat(name), { id: spec, cancel, onBackgroundError }));
    }
    case "anthropic": {
      const anthropic = createAnthropic({ apiKey: env.TIDEMARK_ANTHROPIC_API_KEY ?? env.ANTHROPIC_API_KEY });
      return withRetries(fromAISDKModel(anthropic(name), { id: spec, cancel, onBackgroundError }));
    }
    default:
      throw new Error(`Unknown model "${spec}". Use one of: ${MODEL_SPECS.join(", ")}.`);
  }
}
