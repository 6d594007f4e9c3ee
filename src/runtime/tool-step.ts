import { createId, hashJson, redactValue, storableText, type MessageToolCall, type OperationRecord } from "../core/index.js";
import type { ConsequentialTool, ReadTool, ToolContext } from "../tools/tool.js";
import type { CancelScope } from "./cancel-scope.js";
import { publish } from "./publish.js";
import { RunNotRunningError } from "./run-not-running-error.js";
import { ShieldTimeoutError } from "./shield-timeout-error.js";
import type { RunExecution } from "./run-execution.js";

/** What one tool call produced, as the next model step sees it. */
export interface ToolOutcome {
  content: string;
  isError: boolean;
}

/** A tool call's outcome and the checkpoint that published it (the tool step's completion). */
export interface PublishedToolOutcome {
  outcome: ToolOutcome;
  checkpointId: string;
}

/**
 * Runs one tool call and publishes its result (DESIGN §6):
 * - an unknown tool or an invalid input gets an error result, never a call;
 * - `none` / `idempotent` tools run with the step's signal (or, if they do not honour it, are
 *   awaited in a shielded scope); a result that arrives after a Stop is discarded;
 * - a `consequential` tool is prepared in the ledger with a checkpoint, may wait for approval,
 *   and is handed over only while the run is running (a compare-and-set in the store); the
 *   commit itself runs shielded and its outcome is recorded even if a Stop arrives meanwhile.
 */
export async function runToolCall(
  execution: RunExecution,
  stepId: string,
  call: MessageToolCall,
  signal: AbortSignal,
  scope: CancelScope,
): Promise<PublishedToolOutcome> {
  const { run } = execution;
  const tool = execution.tools.get(call.toolName);
  execution.activeSteps.set(stepId, { stepId, kind: "tool", inputHash: hashJson({ tool: call.toolName, input: call.input }) });
  execution.emit({ type: "tool.started", run_id: run.runId, tool_call_id: call.toolCallId, tool: call.toolName, effect: tool?.effect ?? "unknown" });
  if (!tool) return publishResult(execution, stepId, call, `No tool named "${call.toolName}" is available in this run.`, true);

  const parsed = tool.input.safeParse(parseJson(call.input));
  if (!parsed.success) {
    const problem = parsed.error.issues.map((issue) => `${issue.path.join(".") || "input"}: ${issue.message}`).join("; ");
    return publishResult(execution, stepId, call, `The input for ${tool.name} is not valid (${problem}); the tool was not called.`, true);
  }
  const context: ToolContext = { tenantId: run.tenantId, threadId: run.threadId, runId: run.runId, toolCallId: call.toolCallId, signal };
  if (tool.effect === "consequential") return runConsequential(execution, stepId, call, tool, parsed.data, context, scope);
  return runRead(execution, stepId, call, tool, parsed.data, context, scope);
}

async function runRead(
  execution: RunExecution,
  stepId: string,
  call: MessageToolCall,
  tool: ReadTool<unknown, unknown>,
  input: unknown,
  context: ToolContext,
  scope: CancelScope,
): Promise<PublishedToolOutcome> {
  let result: unknown;
  try {
    result =
      tool.honoursSignal === false
        ? await scope.shield((shielded) => tool.execute(input, { ...context, signal: shielded }))
        : await tool.execute(input, context);
  } catch (error) {
    context.signal.throwIfAborted();
    execution.trace("tool_failed", { tool: tool.name, tool_call_id: call.toolCallId, error: String(error) });
    return publishResult(execution, stepId, call, `${tool.name} failed: ${safeMessage(error)}`, true);
  }
  // Stopped meanwhile: the result is absent, and the call runs again on resume.
  context.signal.throwIfAborted();
  return publishResult(execution, stepId, call, stringify(result), false);
}

async function runConsequential(
  execution: RunExecution,
  stepId: string,
  call: MessageToolCall,
  tool: ConsequentialTool<unknown, unknown, unknown>,
  input: unknown,
  context: ToolContext,
  scope: CancelScope,
): Promise<PublishedToolOutcome> {
  const { run, store, clock } = execution;
  const { signal } = context;
  const idempotencyKey = tool.idempotencyKey(input, context);
  // Made once and redacted here: the ledger, the `tool.prepared` / `run.interrupted` events and
  // the operations API all show this copy, never the tool's own.
  const preview = tool.prepare ? redactValue(execution.redactor, await tool.prepare(input, context)) : null;
  signal.throwIfAborted();
  const prepared = await store.prepareOperation({
    tenantId: run.tenantId,
    opId: createId("op"),
    threadId: run.threadId,
    runId: run.runId,
    toolName: tool.name,
    toolCallId: call.toolCallId,
    idempotencyKey,
    input: JSON.stringify(input),
    preview: preview ?? null,
    checkpointId: createId("cp"),
    now: clock.now(),
  });
  if (prepared.kind === "committed") {
    // The same business action was already done: its stored result, never a second call.
    return publishResult(execution, stepId, call, reusedResult(tool.name, prepared.operation), false, true);
  }
  if (prepared.kind === "refused") {
    signal.throwIfAborted();
    if (prepared.reason === "run_not_running") throw new RunNotRunningError(run.runId, "the run is no longer running");
    const why = prepared.reason === "outcome_unknown" ? "its earlier attempt has an unknown outcome and must be confirmed" : "it is already in progress";
    return publishResult(execution, stepId, call, `${tool.name} was not called: ${why}.`, true);
  }
  const operation = prepared.operation;
  execution.emit({
    type: "tool.prepared",
    run_id: run.runId,
    tool_call_id: call.toolCallId,
    tool: tool.name,
    op_id: operation.opId,
    idempotency_key: idempotencyKey,
    preview: preview ?? null,
  });
  execution.emit({
    type: "checkpoint.saved",
    run_id: run.runId,
    checkpoint_id: prepared.checkpoint.checkpointId,
    state_version: prepared.checkpoint.stateVersion,
    kind: prepared.checkpoint.kind,
  });
  execution.tracing.toolOperation(stepId, operation.opId, "prepared");
  const active: NonNullable<RunExecution["activeOperation"]> = { opId: operation.opId, toolName: tool.name, phase: "prepared" };
  execution.activeOperation = active;
  try {
    if (tool.approval === "required") {
      active.phase = "awaiting_approval";
      const decision = await execution.awaitApproval(operation, signal);
      if (decision === "rejected") {
        await store.abandonOperation({ tenantId: run.tenantId, opId: operation.opId, now: clock.now() });
        return await publishResult(execution, stepId, call, `The user rejected this action; ${tool.name} was not called.`, true);
      }
    }
    // The last safe point: after it, the action belongs to the external system.
    signal.throwIfAborted();
    execution.hasHandedOver = true;
    const begun = await store.beginCommit({ tenantId: run.tenantId, opId: operation.opId, runId: run.runId, attempt: run.attempt, now: clock.now() });
    if (begun.kind === "refused") {
      throw signal.aborted ? signal.reason : new RunNotRunningError(run.runId, `the commit was refused (run ${begun.runStatus})`, begun.runStatus);
    }
  } catch (error) {
    // Stopped (or refused) before the hand-over: abandoned, never committed.
    await store.abandonOperation({ tenantId: run.tenantId, opId: operation.opId, now: clock.now() });
    execution.activeOperation = null;
    throw error;
  }
  active.phase = "committing";
  execution.tracing.toolOperation(stepId, operation.opId, "committing");
  const finished = await commitShielded(execution, tool, input, context, operation, scope);
  execution.activeOperation = null;
  execution.tracing.toolOperation(stepId, operation.opId, finished.phase);
  if (finished.phase === "outcome_unknown") {
    // The commit outlived its bound after a Stop: the ledger says so, and the run's end reports it.
    signal.throwIfAborted();
    return publishResult(execution, stepId, call, finished.content, true);
  }
  execution.emit({ type: "tool.committed", run_id: run.runId, tool_call_id: call.toolCallId, tool: tool.name, op_id: operation.opId, phase: finished.phase });
  // A Stop during the commit: the outcome is in the ledger and reported as an external effect.
  signal.throwIfAborted();
  return publishResult(execution, stepId, call, finished.content, finished.phase === "failed");
}

/**
 * The commit, in a scope a Stop does not abort, with its outcome recorded whatever happens; a
 * commit still running when the shield's bound after a Stop ran out is recorded `outcome_unknown`.
 */
async function commitShielded(
  execution: RunExecution,
  tool: ConsequentialTool<unknown, unknown, unknown>,
  input: unknown,
  context: ToolContext,
  operation: OperationRecord,
  scope: CancelScope,
): Promise<{ phase: "committed" | "failed" | "outcome_unknown"; content: string }> {
  const { run, store, clock } = execution;
  try {
    const result = await scope.shield((shielded) =>
      tool.commit(input, { ...context, signal: shielded, idempotencyKey: operation.idempotencyKey }),
    );
    await store.finishOperation({ tenantId: run.tenantId, opId: operation.opId, phase: "committed", result: result ?? null, now: clock.now() });
    return { phase: "committed", content: stringify(result) };
  } catch (error) {
    if (ShieldTimeoutError.isInstance(error)) {
      const message = `${tool.name} was handed to the external system, but did not finish within ${error.timeoutMs} ms of the Stop; its outcome is unknown.`;
      await store.finishOperation({ tenantId: run.tenantId, opId: operation.opId, phase: "outcome_unknown", error: message, now: clock.now() });
      execution.trace("operation_outcome_unknown", { op_id: operation.opId, tool: tool.name, timeout_ms: error.timeoutMs });
      return { phase: "outcome_unknown", content: message };
    }
    const message = safeMessage(error);
    await store.finishOperation({ tenantId: run.tenantId, opId: operation.opId, phase: "failed", error: message, now: clock.now() });
    execution.trace("operation_failed", { op_id: operation.opId, tool: tool.name, error: String(error) });
    return { phase: "failed", content: `${tool.name} failed: ${message}` };
  }
}

async function publishResult(
  execution: RunExecution,
  stepId: string,
  call: MessageToolCall,
  result: string,
  isError: boolean,
  isReused = false,
): Promise<PublishedToolOutcome> {
  const messageId = createId("msg");
  const content = storableText(result);
  const published = await publish(execution, {
    messageId,
    role: "tool",
    content,
    toolCallId: call.toolCallId,
    toolName: call.toolName,
    completedStepId: stepId,
    recordsStep: true,
    stats: { toolCallCount: 1 },
    complete: false,
  });
  execution.emit({
    type: "tool.result",
    run_id: execution.run.runId,
    tool_call_id: call.toolCallId,
    tool: call.toolName,
    message_id: messageId,
    is_error: isError,
    reused: isReused,
  });
  execution.activeSteps.delete(stepId);
  return { outcome: { content, isError }, checkpointId: published.checkpoint.checkpointId };
}

/** A committed operation's result for a repeat; a reduced row kept only its outcome (docs/data/lifetimes.md). */
function reusedResult(toolName: string, operation: OperationRecord): string {
  if (!operation.reducedAt) return stringify(operation.result);
  return `${toolName} was already done for this action (committed); its result is no longer kept, so it was not called again.`;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function stringify(value: unknown): string {
  return typeof value === "string" ? value : (JSON.stringify(value) ?? "null");
}

/** A tool error's message, bounded; tools are the product's own code, so their messages are shown. */
function safeMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.slice(0, 300);
}
