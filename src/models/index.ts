export { ModelError, parseRetryAfter, type ModelErrorKind } from "../core/model-error.js";
export { withRetries, type RetryOptions } from "./with-retries.js";
export { withIdleTimeout, DEFAULT_IDLE_TIMEOUT_MS, type IdleTimeoutOptions } from "./with-idle-timeout.js";
export { createOpenAICompatibleModel, readChatCompletionStream, type OpenAICompatibleModelOptions } from "./openai-compatible-model.js";
export { fromAISDKModel, type AISDKModelOptions } from "./ai-sdk-model.js";
export { registerProviderCancel, type ProviderCancelOptions } from "./provider-cancel.js";
export { selectModel, MODEL_SPECS } from "./select-model.js";
