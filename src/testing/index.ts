export {
  startTestProvider,
  type TestProvider,
  type TestProviderOptions,
  type TestProviderScenario,
  type RecordedRequest,
} from "./openai-test-provider.js";
