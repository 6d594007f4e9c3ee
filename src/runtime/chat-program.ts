import { createId, hashJson, type MessageToolCall } from "../core/index.js";
import type { PublishMessageInput } from "../store/index.js";
import type { StepDefinition } from "./plan.js";
import { estimateTokens, type ModelMessage, type ModelUsage } from "./model.js";
import type { RunExecution } from "./run-execution.js";

export { buildModelContext } from "./model-context.js";

/** Thrown by a step whose result may not be published because the run stopped being `running`. */
export class PublicationRejectedError extends Error {
  constructor(runId: string) {
    super(`run ${runId} is no longer running; its output was not published`);
    this.name = "PublicationRejectedError";
  }
}

/** Thrown when the model itself failed (as opposed to the runtime). */
export class ModelFailedError extends Error {
  constructor(cause: unknown) {
    super("the model failed", { cause });
    this.name = "ModelFailedError";
  }
}

/** Options for {@link createChatProgram}. */
export interface ChatProgramOptions {
  /** Model calls a run may make before it ends (default 8). */
  maxModelSteps?: number;
}

/**
 * The chat agent loop as a plan. A model step streams an answer and publishes it with its
 * checkpoint. If the model asked for tools, the step publishes each call's result and adds the
 * next model step, which sees them. No tools are registered yet, so each call's result says so
 * truthfully.
 */
export function createChatProgram(execution: RunExecution, context: readonly ModelMessage[], options: ChatProgramOptions = {}): StepDefinition[] {
  return [createModelStep(execution, 1, context, options.maxModelSteps ?? 8)];
}

function createModelStep(execution: RunExecution, index: number, context: readonly ModelMessage[], maxModelSteps: number): StepDefinition {
  const stepId = `model-${index}`;
  return {
    id: stepId,
    async run({ signal, addStep }) {
      const generation = await generate(execution, stepId, context, signal);
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
        // A safe point before each step: nothing more is published after a cancel.
        signal.throwIfAborted();
        const content = `No tool named "${call.toolName}" is available in this run.`;
        await publish(execution, {
          messageId: createId("msg"),
          role: "tool",
          content,
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          completedStepId: `${stepId}/${call.toolCallId}`,
          stats: { toolCallCount: 1 },
          complete: false,
        });
        next.push({ role: "tool", toolCallId: call.toolCallId, toolName: call.toolName, content, isError: true });
      }
      if (index < maxModelSteps) addStep(createModelStep(execution, index + 1, next, maxModelSteps));
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
async function generate(execution: RunExecution, stepId: string, context: readonly ModelMessage[], signal: AbortSignal): Promise<Generation> {
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
    for await (const part of execution.model.stream({ messages: context }, { signal })) {
      // Safe point between chunks: nothing reaches the stream after a cancel was accepted.
      if (signal.aborted) break;
      if (part.type === "text-delta") {
        parts.push(part.text);
        discarded.streamChars += part.text.length;
        execution.emit({ type: "message.delta", run_id: run.runId, message_id: messageId, text: part.text });
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

type PublishRequest = Omit<PublishMessageInput, "tenantId" | "runId" | "checkpointId" | "now">;

/** Publishes a message with its checkpoint, or throws if a cancel (or any terminal write) won. */
async function publish(execution: RunExecution, request: PublishRequest): Promise<void> {
  const { run } = execution;
  const published = await execution.store.publishMessage({
    ...request,
    tenantId: run.tenantId,
    runId: run.runId,
    checkpointId: createId("cp"),
    now: execution.clock.now(),
  });
  if (published.kind === "rejected") {
    // A cancel (or another terminal write) committed first: the late output goes to traces only.
    execution.trace("late_output_discarded", { message_id: request.messageId, chars: request.content.length, step_id: request.completedStepId });
    throw new PublicationRejectedError(run.runId);
  }
  execution.emit({
    type: "message.published",
    run_id: run.runId,
    message_id: request.messageId,
    state_version: published.thread.stateVersion,
    checkpoint_id: published.checkpoint.checkpointId,
    role: request.role,
  });
  execution.emit({
    type: "checkpoint.saved",
    run_id: run.runId,
    checkpoint_id: published.checkpoint.checkpointId,
    state_version: published.checkpoint.stateVersion,
    kind: published.checkpoint.kind,
  });
  execution.emit({ type: "stats.updated", run_id: run.runId, thread_stats: published.thread.stats, run_stats: published.run.stats });
}
