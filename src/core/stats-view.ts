/** Usage counts in the snake_case wire shape, shared by the views (DESIGN §8) and `stats.updated`. */
import type { UsageStats } from "./records.js";

export interface StatsView {
  message_count: number;
  llm_call_count: number;
  tool_call_count: number;
  input_tokens: number;
  output_tokens: number;
  tokens_estimated: boolean;
  discarded_generation_count: number;
  discarded_stream_chars: number;
  discarded_output_tokens: number;
}

export function statsView(stats: UsageStats): StatsView {
  return {
    message_count: stats.messageCount,
    llm_call_count: stats.llmCallCount,
    tool_call_count: stats.toolCallCount,
    input_tokens: stats.inputTokens,
    output_tokens: stats.outputTokens,
    tokens_estimated: stats.tokensEstimated,
    discarded_generation_count: stats.discardedGenerationCount,
    discarded_stream_chars: stats.discardedStreamChars,
    discarded_output_tokens: stats.discardedOutputTokens,
  };
}
