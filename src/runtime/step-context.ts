import { addStats, createId, emptyStats, hashJson, storableText, type MessageToolCall, type UsageStats } from "../core/index.js";
import { InvariantError } from "../core/errors/invariant-error.js";
import type { ModelMessage, ToolCall } from "../core/model.js";
import type { AgentRunContext, PublishedStep, StepGeneration, StepRunContext, StepToolOutcome } from "../agents/define-agent.js";
import { ModelFailedError } from "./model-failed-error.js";
import { publish } from "./publish.js";
import type { RunExecution } from "./run-execution.js";
import { runToolCall } from "./tool-step.js";
import type { GenerationMeter } from "./generation-meter.js";
import type { CancelScope } from "./cancel-scope.js";
import type { StopState } from "../core/index.js";

/** How a step's own work was made durable, once it was. */
export type StepRecord = { kind: "published"; published: PublishedStep; checkpointId: string } | { kind: "tool"; outcome: StepToolOutcome; checkpointId: string };

/** A step context plus what the runner needs to know afterwards. */
export interface RunningStep<Config> {
  readonly context: StepRunContext<Config>;
  /** Set once the step published (or answered a tool call): its completion is already durable. */
  record(): StepRecord | undefined;
  /** The counts of the step's generations, for the checkpoint of a step that returns its result. */
  generationStats(): Partial<UsageStats>;
  /** That checkpoint was written: the step's generations are kept, no longer discarded. */
  keepGenerations(): void;
}

/** What the runner hands a step besides the execution. */
export interface StepContextOptions<Config> {
  stepId: string;
  run: AgentRunContext<Config>;
  signal: AbortSignal;
  scope: CancelScope;
  result(stepId: string): unknown;
  addStep: StepRunContext<Config>["addStep"];
}

/** The context a step runs with: the run's model, tools and ledger, scoped to this step's signal. */
export function createStepContext<Config>(execution: RunExecution, options: StepContextOptions<Config>): RunningStep<Config> {
  const { stepId, signal } = options;
  let record: StepRecord | undefined;
  let isRecording = false;
  // The step's generations whose counts are still open (discarded, unless it publishes or returns them).
  const generated = new Map<StepGeneration, GenerationMeter>();
  // One step, one transition: taken before the write starts, so two concurrent calls cannot both write.
  const claimTransition = (what: string): void => {
    if (isRecording) throw new InvariantError(`step "${stepId}" ${what} after it already completed its work (one step, one transition)`);
    isRecording = true;
  };
  const context: StepRunContext<Config> = {
    ...options.run,
    stepId,
    signal,
    result: <T,>(id: string) => options.result(id) as T,
    addStep: options.addStep,
    async generate(request) {
      const { generation, meter } = await generate(execution, stepId, request.messages, request.offerTools === true, signal);
      generated.set(generation, meter);
      return generation;
    },
    async publish(content, publishOptions = {}) {
      claimTransition("published");
      const generation = typeof content === "string" ? undefined : content;
      const text = storableText(generation ? generation.text : content as string);
      const meter = generation ? generated.get(generation) : undefined;
      const published = await publish(execution, {
        messageId: generation?.messageId ?? createId("msg"),
        role: "assistant",
        content: text,
        toolCalls: generation?.toolCalls.map(toMessageToolCall) ?? [],
        completedStepId: stepId,
        ...(publishOptions.label !== undefined ? { label: storableText(publishOptions.label) } : {}),
        recordsStep: true,
        stats: meter ? execution.generations.keptStats(meter, text) : {},
        complete: publishOptions.final === true,
      });
      if (generation && meter) {
        // Only once published: a publication the store refused leaves the generation discarded.
        execution.generations.keep(meter);
        generated.delete(generation);
      }
      execution.activeSteps.delete(stepId);
      const result: PublishedStep = { messageId: published.message.messageId, content: text, label: published.message.label };
      record = { kind: "published", published: result, checkpointId: published.checkpoint.checkpointId };
      return result;
    },
    async callTool(call: ToolCall) {
      claimTransition("called a tool");
      const effect = execution.tools.get(call.toolName)?.effect ?? "unknown";
      const { outcome, checkpointId } = await execution.tracing.toolCall(stepId, { tool: call.toolName, toolCallId: call.toolCallId, effect }, signal, () =>
        runToolCall(execution, stepId, toMessageToolCall(call), signal, options.scope),
      );
      record = { kind: "tool", outcome, checkpointId };
      return outcome;
    },
  };
  const generationStats = (): Partial<UsageStats> => {
    if (generated.size === 0) return {};
    let stats = emptyStats();
    for (const [generation, meter] of generated) stats = addStats(stats, execution.generations.keptStats(meter, generation.text));
    return stats;
  };
  const keepGenerations = (): void => {
    for (const meter of generated.values()) execution.generations.keep(meter);
    generated.clear();
  };
  return { context, record: () => record, generationStats, keepGenerations };
}

function toMessageToolCall(call: ToolCall): MessageToolCall {
  return { toolCallId: call.toolCallId, toolName: call.toolName, input: call.input };
}

/** Streams one generation, emitting its deltas; a cancel or failure leaves it counted as discarded. */
async function generate(
  execution: RunExecution,
  stepId: string,
  messages: readonly ModelMessage[],
  offerTools: boolean,
  signal: AbortSignal,
): Promise<{ generation: StepGeneration; meter: GenerationMeter }> {
  const { run } = execution;
  execution.activeSteps.set(stepId, { stepId, kind: "model", inputHash: hashJson(messages) });
  const messageId = createId("msg");
  const parts: string[] = [];
  const toolCalls: ToolCall[] = [];
  // The run's own instructions lead every request; they are the run's, not the thread's, so never published.
  const request = run.instructions === null ? messages : [{ role: "system" as const, content: run.instructions }, ...messages];
  const meter = execution.generations.start(request);
  const tools = offerTools ? execution.toolDefinitions : [];
  const traced = execution.tracing.modelRequest(stepId, { model: execution.model.id, messages: request.length, tools: tools.length });
  let chunks = 0;
  try {
    for await (const part of execution.model.stream({ messages: request, ...(tools.length ? { tools } : {}) }, { signal })) {
      // Safe point between chunks: nothing reaches the stream after a cancel was accepted.
      if (signal.aborted) {
        // The provider kept sending after a Stop aborted the request: counted for operators, dropped.
        if (isStopping(execution.stop.state)) execution.chunkAfterStop();
        break;
      }
      if (part.type === "text-delta") {
        const text = storableText(part.text);
        parts.push(text);
        chunks++;
        meter.streamChars += text.length;
        execution.emit({ type: "message.delta", run_id: run.runId, message_id: messageId, text });
      } else if (part.type === "tool-call") {
        toolCalls.push(part.toolCall);
      } else {
        meter.usage = part.usage;
      }
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    traced.failed(error);
    throw new ModelFailedError(error);
  } finally {
    traced.end({ chars: meter.streamChars, chunks, toolCalls: toolCalls.length, aborted: signal.aborted });
  }
  signal.throwIfAborted();
  const text = parts.join("");
  meter.outputTokens = meter.usage?.outputTokens ?? Math.ceil(text.length / 4);
  return { generation: { messageId, text, toolCalls, usage: meter.usage }, meter };
}

/** Whether the run's work was aborted by a Stop (not a drain or a lost lease). */
function isStopping(state: StopState): boolean {
  return state.kind === "requested" || state.kind === "recorded" || state.kind === "unrecorded";
}
