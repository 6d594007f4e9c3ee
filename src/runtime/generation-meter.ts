import type { UsageStats } from "../core/index.js";
import { estimateTokens, type ModelMessage, type ModelUsage } from "../core/model.js";

/** One generation in flight: what it has streamed, counted until it is kept (published or used). */
export interface GenerationMeter {
  streamChars: number;
  inputTokens: number;
  outputTokens: number;
  isEstimated: boolean;
  /** The provider's usage, when it sent one. */
  usage: ModelUsage | undefined;
}

/**
 * The run's generations that were started and not kept. Several steps may generate at once; when a
 * Stop cuts them, the run's terminal write counts all of them as discarded (DESIGN §10).
 */
export class GenerationMeters {
  readonly #open = new Set<GenerationMeter>();

  /** A generation starts on `context`. */
  start(context: readonly ModelMessage[]): GenerationMeter {
    const meter: GenerationMeter = {
      streamChars: 0,
      inputTokens: context.reduce((sum, message) => sum + estimateTokens(message.content), 0),
      outputTokens: 0,
      isEstimated: true,
      usage: undefined,
    };
    this.#open.add(meter);
    return meter;
  }

  /** The counts a generation adds where it is kept (its publication or its step's result). */
  keptStats(meter: GenerationMeter, text: string): Pick<UsageStats, "llmCallCount" | "inputTokens" | "outputTokens" | "tokensEstimated"> {
    const usage = meter.usage;
    return {
      llmCallCount: 1,
      inputTokens: usage?.inputTokens ?? meter.inputTokens,
      outputTokens: usage?.outputTokens ?? estimateTokens(text),
      tokensEstimated: usage?.isEstimated ?? true,
    };
  }

  /** The generation was kept: its counts went with what kept it, so it is no longer discarded. */
  keep(meter: GenerationMeter): void {
    this.#open.delete(meter);
  }

  /**
   * The counts of every generation started and not kept; `heardChars` of them were kept after all
   * (a live turn's heard answer, published with its cancel), so they are not discarded.
   */
  discardedStats(heardChars = 0): Partial<UsageStats> {
    if (this.#open.size === 0) return {};
    const stats = {
      llmCallCount: 0,
      inputTokens: 0,
      outputTokens: 0,
      tokensEstimated: false,
      discardedGenerationCount: 0,
      discardedStreamChars: 0,
      discardedOutputTokens: 0,
    };
    for (const meter of this.#open) {
      // The provider's own figure when it sent one before the stop, else an estimate, flagged.
      const outputTokens = meter.usage?.outputTokens || meter.outputTokens || Math.ceil(meter.streamChars / 4);
      const isEstimated = meter.usage ? meter.usage.isEstimated : true;
      stats.llmCallCount += 1;
      stats.inputTokens += meter.usage?.inputTokens ?? meter.inputTokens;
      stats.outputTokens += outputTokens;
      stats.tokensEstimated ||= isEstimated;
      stats.discardedGenerationCount += 1;
      stats.discardedStreamChars += meter.streamChars;
      stats.discardedOutputTokens += outputTokens;
    }
    if (heardChars > 0 && stats.discardedStreamChars > 0) {
      // The heard part's tokens are not known apart from the rest's: shared by characters, flagged.
      const kept = Math.min(heardChars, stats.discardedStreamChars);
      stats.discardedOutputTokens = Math.round((stats.discardedOutputTokens * (stats.discardedStreamChars - kept)) / stats.discardedStreamChars);
      stats.discardedStreamChars -= kept;
      stats.tokensEstimated = true;
    }
    return stats;
  }
}
