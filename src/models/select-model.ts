import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createDemoModel } from "./demo-model.js";
import { ConfigurationError } from "../core/errors/configuration-error.js";
import type { ChatModel } from "../core/model.js";
import { fromAISDKModel } from "./ai-sdk-model.js";
import { createOpenAICompatibleModel } from "./openai-compatible-model.js";
import type { ProviderCancelOptions } from "./provider-cancel.js";
import { withResilience } from "./resilient-stream.js";
import { DEFAULT_IDLE_TIMEOUT_MS } from "./with-idle-timeout.js";
import { retryPolicy } from "./with-retries.js";

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
 * Real models retry retryable failures before their first token, and a stream that sends nothing
 * for `TIDEMARK_PROVIDER_IDLE_TIMEOUT_MS` (default 5 minutes; 0: never) is ended as stalled.
 *
 * A configuration that cannot work (a provider without its API key, an address that is not an
 * http(s) URL, a pace that is not a number) throws here, so the server refuses to start instead
 * of failing every run; the message names the setting and never repeats its value.
 */
export function selectModel(spec: string, env: Record<string, string | undefined> = process.env, onBackgroundError?: (error: unknown) => void): ChatModel {
  const number = (name: string): number | undefined => {
    const value = setting(env, name);
    if (value === undefined) return undefined;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < 0) throw new ConfigurationError(`${name} must be a number of at least 0.`, { setting: name });
    return parsed;
  };
  if (spec === "demo") {
    return createDemoModel({ wordsPerSecond: number("TIDEMARK_DEMO_WORDS_PER_SECOND"), wordCount: number("TIDEMARK_DEMO_WORDS") });
  }
  const separator = spec.indexOf(":");
  const provider = separator > 0 ? spec.slice(0, separator) : "";
  const name = spec.slice(separator + 1);
  if (!name) throw new ConfigurationError(`--model ${spec}: name the model, e.g. ${provider || "openai-compatible"}:llama3.1`, { setting: "--model" });
  const cancelUrl = httpUrl(env, "TIDEMARK_PROVIDER_CANCEL_URL");
  const cancel: ProviderCancelOptions | undefined = cancelUrl ? { url: cancelUrl, tokenHeader: setting(env, "TIDEMARK_PROVIDER_CANCEL_HEADER") } : undefined;
  const idleTimeoutMs = number("TIDEMARK_PROVIDER_IDLE_TIMEOUT_MS");
  // withRetries over withIdleTimeout, in one layer: a stall is a retryable failure, so one before the first token is retried.
  const resilient = (model: ChatModel): ChatModel => withResilience(model, { retries: retryPolicy(), idleTimeoutMs: idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS });
  switch (provider) {
    case "openai-compatible": {
      const baseURL = httpUrl(env, "TIDEMARK_OPENAI_BASE_URL");
      if (!baseURL) throw new ConfigurationError("--model openai-compatible:… needs TIDEMARK_OPENAI_BASE_URL (e.g. http://127.0.0.1:11434/v1).", { setting: "TIDEMARK_OPENAI_BASE_URL" });
      return resilient(createOpenAICompatibleModel({ model: name, baseURL, apiKey: setting(env, "TIDEMARK_OPENAI_API_KEY"), cancel, onBackgroundError }));
    }
    case "openai": {
      const apiKey = setting(env, "TIDEMARK_OPENAI_API_KEY") ?? setting(env, "OPENAI_API_KEY");
      if (!apiKey) throw new ConfigurationError(`--model ${spec} needs an API key: set OPENAI_API_KEY (or TIDEMARK_OPENAI_API_KEY).`, { setting: "OPENAI_API_KEY" });
      const openai = createOpenAI({ apiKey, baseURL: httpUrl(env, "TIDEMARK_OPENAI_BASE_URL") });
      return resilient(fromAISDKModel(openai.chat(name), { id: spec, cancel, onBackgroundError }));
    }
    case "anthropic": {
      const apiKey = setting(env, "TIDEMARK_ANTHROPIC_API_KEY") ?? setting(env, "ANTHROPIC_API_KEY");
      if (!apiKey) throw new ConfigurationError(`--model ${spec} needs an API key: set ANTHROPIC_API_KEY (or TIDEMARK_ANTHROPIC_API_KEY).`, { setting: "ANTHROPIC_API_KEY" });
      const anthropic = createAnthropic({ apiKey });
      return resilient(fromAISDKModel(anthropic(name), { id: spec, cancel, onBackgroundError }));
    }
    default:
      throw new ConfigurationError(`Unknown model "${spec}". Use one of: ${MODEL_SPECS.join(", ")}.`, { setting: "--model" });
  }
}

/** A setting's value; an empty or blank one counts as unset. */
function setting(env: Record<string, string | undefined>, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/** A setting that must be an http(s) URL (it may hold credentials, so the message never repeats it). */
function httpUrl(env: Record<string, string | undefined>, name: string): string | undefined {
  const value = setting(env, name);
  if (value === undefined) return undefined;
  let protocol: string | undefined;
  try {
    protocol = new URL(value).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== "http:" && protocol !== "https:") throw new ConfigurationError(`${name} must be an http:// or https:// URL.`, { setting: name });
  return value;
}
