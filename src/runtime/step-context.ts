import type { z } from "zod";
import {
  addStats,
  createId,
  emptyStats,
  hashJson,
  notUsableReason,
  storableText,
  type ConfirmedResults,
  type MessageRecord,
  type MessageToolCall,
  type UsageStats,
} from "../core/index.js";
import { InvariantError } from "../core/errors/invariant-error.js";
import type { ModelMessage, ModelResponseFormat, ToolCall } from "../core/model.js";
import type { AgentRunContext, PublishedStep, StepGeneration, StepObject, StepRunContext, StepToolOutcome } from "../agents/define-agent.js";
import { NotUsableForExecutionError } from "./not-usable-for-execution-error.js";
import { collectResults } from "./collect-results.js";
import { parseStructuredOutput, responseFormatFor } from "./structured-output.js";
import { ModelFailedError } from "./model-failed-error.js";
import { publish } from "./publish.js";
import type { RunExecution } from "./run-execution.js";
import { runToolCall } from "./tool-step.js";
import type { GenerationMeter } from "./generation-meter.js";
import type { CancelScope } from "./cancel-scope.js";
import type { StopState } from "../core/index.js";

/** How a step's own work was made durable, once it was. */
export type StepRecord =
  /** `endedRun`: the publication was the run's final one, written with the run's end (which closed every step's row). */
  | { kind: "published"; published: PublishedStep; checkpointId: string; endedRun: boolean }
  | { kind: "tool"; outcome: StepToolOutcome; checkpointId: string };

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
  /** A message of the thread: its history when the run started, and what the run published since. */
  message(messageId: string): MessageRecord | undefined;
  /** The step published `message` (so a later step's `objectOf` finds it). */
  published(message: MessageRecord): void;
  /** The result set the Stop this run continues from confirmed for this step, if any. */
  confirmedAtStop: ConfirmedResults | undefined;
}

/** What a structured step may name its object: the providers' rule for a response format's name. */
const OBJECT_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** The context a step runs with: the run's model, tools and ledger, scoped to this step's signal. */
export function createStepContext<Config>(execution: RunExecution, options: StepContextOptions<Config>): RunningStep<Config> {
  const { stepId, signal } = options;
  let record: StepRecord | undefined;
  let isRecording = false;
  // The step's generations whose counts are still open (discarded, unless it publishes or returns them).
  const generated = new Map<StepGeneration, GenerationMeter>();
  // A validated object, and the generation it came from (its counts are kept when it is published).
  const objects = new Map<StepObject, StepGeneration>();
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
    async generateObject<T>(request: { messages: readonly ModelMessage[]; schema: z.ZodType<T>; name?: string }) {
      const name = request.name ?? "object";
      if (!OBJECT_NAME.test(name)) throw new InvariantError(`step "${stepId}": an object's name must be 1–64 letters, digits, '_' or '-'`);
      const format = responseFormatFor(request.schema, name);
      const { generation, meter } = await generate(execution, stepId, request.messages, false, signal, format);
      generated.set(generation, meter);
      // Only the whole text, validated: a prefix that parses is not the object (it stays discarded).
      const object: StepObject<T> = {
        messageId: generation.messageId,
        object: parseStructuredOutput(generation.text, request.schema),
        text: generation.text,
        usage: generation.usage,
      };
      objects.set(object, generation);
      return object;
    },
    objectOf<T>(source: string | PublishedStep, schema?: z.ZodType<T>): T {
      const found = typeof source === "string" ? options.message(source) : { ...source, publicationStatus: "published" as const };
      if (!found) throw new NotUsableForExecutionError(source as string, "not_found");
      const reason = notUsableReason(found, true);
      if (reason) throw new NotUsableForExecutionError(found.messageId, reason);
      return schema ? parseStructuredOutput(found.content, schema) : (JSON.parse(found.content) as T);
    },
    async publish(content, publishOptions = {}) {
      claimTransition("published");
      const isObject = typeof content !== "string" && "object" in content;
      const generation = typeof content === "string" ? undefined : isObject ? objects.get(content) : content;
      if (isObject && !generation) throw new InvariantError(`step "${stepId}" published an object that generateObject did not return`);
      // An object is published as its validated value's JSON: what a later step's objectOf reads back.
      const text = storableText(isObject ? JSON.stringify(content.object) : generation ? generation.text : (content as string));
      const meter = generation ? generated.get(generation) : undefined;
      const published = await publish(execution, {
        messageId: generation?.messageId ?? createId("msg"),
        role: "assistant",
        content: text,
        toolCalls: generation?.toolCalls.map(toMessageToolCall) ?? [],
        completedStepId: stepId,
        ...(publishOptions.label !== undefined ? { label: storableText(publishOptions.label) } : {}),
        ...(isObject ? { format: "json" as const } : {}),
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
      options.published(published.message);
      const result: PublishedStep = { messageId: published.message.messageId, content: text, label: published.message.label, format: published.message.format };
      record = { kind: "published", published: result, checkpointId: published.checkpoint.checkpointId, endedRun: publishOptions.final === true };
      return result;
    },
    collect(source, collectOptions) {
      const afterStopMs = options.scope.shieldTimeoutMs;
      return collectResults(execution, { stepId, signal, source, id: collectOptions.id, confirmed: options.confirmedAtStop, afterStopMs });
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
  responseFormat?: ModelResponseFormat,
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
    const modelRequest = { messages: request, ...(tools.length ? { tools } : {}), ...(responseFormat ? { responseFormat } : {}) };
    for await (const part of execution.model.stream(modelRequest, { signal })) {
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
        // An object forming is marked, so a fragment saved of it is labelled not usable for execution.
        if (responseFormat) execution.emit({ type: "message.delta", run_id: run.runId, message_id: messageId, text, format: "json" });
        else execution.emit({ type: "message.delta", run_id: run.runId, message_id: messageId, text });
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
