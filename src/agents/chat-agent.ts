import type { ModelMessage, ToolCall } from "../core/model.js";
import { defineAgent, type AgentDefinition, type AgentStep, type AgentTool, type StepRunContext, type StepToolOutcome } from "./define-agent.js";

/** Options for {@link createChatAgent}. */
export interface ChatAgentOptions {
  /** Model calls a run may make before it ends (default 8). */
  maxModelSteps?: number;
}

/**
 * The chat loop (the default agent) as steps. A model step streams an answer and publishes it
 * with its checkpoint; if the model asked for tools, each call is a step of its own (read-only
 * calls run at once, consequential ones one after another, in the model's order), and the next
 * model step depends on all of them. A Continue rebuilds from history: the model sees what was
 * kept, and a call without a result carries its outcome (DESIGN §6, §9).
 */
export function createChatAgent(options: ChatAgentOptions = {}): AgentDefinition<Record<string, never>> {
  const maxModelSteps = options.maxModelSteps ?? 8;
  return defineAgent({
    name: "chat",
    description: "A chat loop with tools: the model answers, calling the deployed tools as it needs.",
    continuesFromHistory: true,
    steps: ({ messages }) => [modelStep(1, [], () => messages, maxModelSteps)],
  });
}

type ChatStep = AgentStep<Record<string, never>>;
type ChatStepContext = StepRunContext<Record<string, never>>;

/** A model step; `contextOf` gives what it sees once its dependencies (the tool calls before it) are done. */
function modelStep(index: number, dependsOn: readonly string[], contextOf: (step: ChatStepContext) => readonly ModelMessage[], maxModelSteps: number): ChatStep {
  const stepId = `model-${index}`;
  return {
    id: stepId,
    title: index === 1 ? "Answer" : `Answer with the tool results (${index})`,
    dependsOn,
    async run(step) {
      const context = contextOf(step);
      const generation = await step.generate({ messages: context, offerTools: true });
      const isLast = generation.toolCalls.length === 0;
      await step.publish(generation, { final: isLast });
      if (isLast) return;
      const calls = generation.toolCalls;
      const toolStepIds = calls.map((call) => `${stepId}/${call.toolCallId}`);
      let lastConsequential: string | undefined;
      calls.forEach((call, i) => {
        // A consequential action waits for the one before it: the model's order is the business's.
        const isConsequential = effectOf(step.tools, call) === "consequential";
        step.addStep({
          id: toolStepIds[i]!,
          title: call.toolName,
          ...(isConsequential && lastConsequential ? { dependsOn: [lastConsequential] } : {}),
          run: (toolStep) => toolStep.callTool(call),
        });
        if (isConsequential) lastConsequential = toolStepIds[i];
      });
      if (index >= maxModelSteps) return;
      // The next model call sees the answer with its calls and every call's result, in call order.
      const answered: ModelMessage = { role: "assistant", content: generation.text, toolCalls: calls };
      step.addStep(
        modelStep(index + 1, toolStepIds, (next) => [...context, answered, ...calls.map((call, i) => resultMessage(call, next.result<StepToolOutcome>(toolStepIds[i]!)))], maxModelSteps),
      );
    },
  };
}

function resultMessage(call: ToolCall, outcome: StepToolOutcome): ModelMessage {
  return { role: "tool", toolCallId: call.toolCallId, toolName: call.toolName, content: outcome.content, isError: outcome.isError };
}

function effectOf(tools: readonly AgentTool[], call: ToolCall): AgentTool["effect"] | undefined {
  return tools.find((tool) => tool.name === call.toolName)?.effect;
}
