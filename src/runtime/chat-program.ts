import { z } from "zod";
import { createId, hashJson, storableText, type MessageToolCall } from "../core/index.js";
import type { StepDefinition } from "./plan.js";
import { estimateTokens, type ModelMessage, type ModelToolDefinition, type ModelUsage } from "../core/model.js";
import { ModelFailedError } from "./model-failed-error.js";
import { publish } from "./publish.js";
import type { RunExecution } from "./run-execution.js";
import { runToolCall } from "./tool-step.js";

export { PublicationRejectedError } from "./publication-rejected-error.js";
export { ModelFailedError } from "./model-failed-error.js";

export { buildModelContext } from "./model-context.js";

/** Options for {@link createChatProgram}. */
export interface ChatProgramOptions {
  /** Model calls a run may make before it ends (default 8). */
  maxModelSteps?: number;
}

/**
 * The chat agent loop as a plan. A model step streams an answer and publishes it with its
 * checkpoint. If the model asked for tools, the step runs each call (see `runToolCall`),
 * publishes its result, and adds the next model step, which sees them.
 */
export function createChatProgram(execution: RunExecution, context: readonly ModelMessage[], options: ChatProgramOptions = {}): StepDefinition[] {
  const tools: ModelToolDefinition[] = [...execution.tools.values()].map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.input) as Record<string, unknown>,
  }));
  return [createModelStep(execution, 1, context, tools, options.maxModelSteps ?? 8)];
}

function createModelStep(
  execution: RunExecution,
  index: number,
  context: readonly ModelMessage[],
  tools: readonly ModelToolDefinition[],
  maxModelSteps: number,
): StepDefinition {
  const stepId = `model-${index}`;
  return {
    id: stepId,
    async run({ signal, scope, addStep }) {
      const generation = await generate(execution, stepId, context, tools, signal);
      const isLast = generation.toolCalls.length === 0;
      const tokens = generation.usage ?? {
        inputTokens: execution.discarded.inputTokens,
        outputTokens: estimateTokens(generation.text),
        isEstimated: true,
      };
      await publish(execution, {
        messageId: generation.messageId,
        role: "assistant",
        content: generation.text,
        toolCalls: generation.toolCalls,
        completedStepId: stepId,
        stats: { llmCallCount: 1, inputTokens: tokens.inputTokens, outputTokens: tokens.outputTokens, tokensEstimated: tokens.isEstimated },
        complete: isLast,
      });
      execution.discarded.llmCalls = 0;
      execution.discarded.streamChars = 0;
      execution.activeStep = null;
      if (isLast) return;

      const next: ModelMessage[] = [...context, { role: "assistant", content: generation.text, toolCalls: generation.toolCalls }];
      for (const call of generation.toolCalls) {
        // A safe point before each tool call: nothing more starts after a cancel.
        signal.throwIfAborted();
        const outcome = await runToolCall(execution, `${stepId}/${call.toolCallId}`, call, signal, scope);
        next.push({ role: "tool", toolCallId: call.toolCallId, toolName: call.toolName, content: outcome.content, isError: outcome.isError });
      }
      if (index < maxModelSteps) addStep(createModelStep(execution, index + 1, next, tools, maxModelSteps));
    },
  };
}

interface Generation {
  messageId: string;
  text: string;
  toolCalls: MessageToolCall[];
  usage: ModelUsage | undefined;
}

/** Streams one generation, emitting its deltas; a cancel or failure discards it. */
async function generate(
  execution: RunExecution,
  stepId: string,
  context: readonly ModelMessage[],
  tools: readonly ModelToolDefinition[],
  signal: AbortSignal,
): Promise<Generation> {
  const { run, discarded } = execution;
  execution.activeStep = { stepId, kind: "model", inputHash: hashJson(context) };
  const messageId = createId("msg");
  const parts: string[] = [];
  const toolCalls: MessageToolCall[] = [];
  let usage: ModelUsage | undefined;
  discarded.llmCalls = 1;
  discarded.streamChars = 0;
  discarded.outputTokens = 0;
  discarded.inputTokens = context.reduce((sum, message) => sum + estimateTokens(message.content), 0);
  try {
    for await (const part of execution.model.stream({ messages: context, ...(tools.length ? { tools } : {}) }, { signal })) {
      // Safe point between chunks: nothing reaches the stream after a cancel was accepted.
      if (signal.aborted) break;
      if (part.type === "text-delta") {
        const text = storableText(part.text);
        parts.push(text);
        discarded.streamChars += text.length;
        execution.emit({ type: "message.delta", run_id: run.runId, message_id: messageId, text });
      } else if (part.type === "tool-call") {
        toolCalls.push(part.toolCall);
      } else {
        usage = part.usage;
      }
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    throw new ModelFailedError(error);
  }
  signal.throwIfAborted();
  const text = parts.join("");
  discarded.outputTokens = usage?.outputTokens ?? estimateTokens(text);
  discarded.isEstimated = usage?.isEstimated ?? true;
  if (usage) discarded.inputTokens = usage.inputTokens;
  return { messageId, text, toolCalls, usage };
}
