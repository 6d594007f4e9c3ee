import { createId, hashJson, type MessageRecord } from "../core/index.js";
import type { StepDefinition } from "./plan.js";
import type { ModelMessage, ModelUsage } from "./model.js";
import { estimateTokens } from "./model.js";
import type { RunExecution } from "./run-execution.js";

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

/** The model context for a run: the thread's published messages, in order. */
export function buildModelContext(messages: readonly MessageRecord[]): ModelMessage[] {
  return messages
    .filter((message) => message.publicationStatus === "published")
    .map((message) => ({ role: message.role, content: message.content }));
}

/**
 * The chat agent loop as a plan: one model step that streams an answer and publishes it with
 * its checkpoint. Tools will add steps (tool calls, then the next model step) from inside it.
 */
export function createChatProgram(execution: RunExecution, context: readonly ModelMessage[]): StepDefinition[] {
  return [createModelStep(execution, "model-1", context)];
}

function createModelStep(execution: RunExecution, stepId: string, context: readonly ModelMessage[]): StepDefinition {
  return {
    id: stepId,
    async run({ signal }) {
      const { run } = execution;
      execution.activeStep = { stepId, kind: "model", inputHash: hashJson(context) };
      const messageId = createId("msg");
      const parts: string[] = [];
      let chars = 0;
      let usage: ModelUsage | undefined;
      execution.discarded.llmCalls = 1;
      execution.discarded.inputTokens = context.reduce((sum, message) => sum + estimateTokens(message.content), 0);
      try {
        for await (const part of execution.model.stream({ messages: context }, { signal })) {
          // Safe point between chunks: nothing reaches the stream after a cancel was accepted.
          if (signal.aborted) break;
          if (part.type === "text-delta") {
            parts.push(part.text);
            chars += part.text.length;
            execution.discarded.streamChars = chars;
            execution.emit({ type: "message.delta", run_id: run.runId, message_id: messageId, text: part.text });
          } else if (part.type === "finish") {
            usage = part.usage;
          }
        }
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw new ModelFailedError(error);
      }
      signal.throwIfAborted();
      const content = parts.join("");
      execution.discarded.outputTokens = usage?.outputTokens ?? estimateTokens(content);
      execution.discarded.isEstimated = usage?.isEstimated ?? true;
      const tokens = usage ?? {
        inputTokens: execution.discarded.inputTokens,
        outputTokens: estimateTokens(content),
        isEstimated: true,
      };
      const published = await execution.store.publishMessage({
        tenantId: run.tenantId,
        runId: run.runId,
        messageId,
        checkpointId: createId("cp"),
        role: "assistant",
        content,
        completedStepId: stepId,
        stats: {
          llmCallCount: 1,
          inputTokens: tokens.inputTokens,
          outputTokens: tokens.outputTokens,
          tokensEstimated: tokens.isEstimated,
        },
        complete: true,
        now: execution.clock.now(),
      });
      if (published.kind === "rejected") {
        // A cancel (or another terminal write) committed first: the late output goes to traces only.
        execution.trace("late_output_discarded", { message_id: messageId, chars, step_id: stepId });
        throw new PublicationRejectedError(run.runId);
      }
      execution.discarded.llmCalls = 0;
      execution.discarded.streamChars = 0;
      execution.activeStep = null;
      execution.emit({
        type: "message.published",
        run_id: run.runId,
        message_id: messageId,
        state_version: published.thread.stateVersion,
        checkpoint_id: published.checkpoint.checkpointId,
        role: "assistant",
      });
      execution.emit({
        type: "checkpoint.saved",
        run_id: run.runId,
        checkpoint_id: published.checkpoint.checkpointId,
        state_version: published.checkpoint.stateVersion,
        kind: published.checkpoint.kind,
      });
      execution.emit({
        type: "stats.updated",
        run_id: run.runId,
        thread_stats: published.thread.stats,
        run_stats: published.run.stats,
      });
      return { messageId, stateVersion: published.thread.stateVersion };
    },
  };
}
