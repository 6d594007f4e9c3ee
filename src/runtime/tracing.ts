/**
 * OpenTelemetry spans for operators (issue 17): the runtime calls these small helpers, never the
 * OTel API itself. `@opentelemetry/api` is a no-op until the application registers an SDK, so
 * without one every helper costs an object or two and records nothing.
 *
 * The tree of one run:
 *
 * ```
 * tidemark.run                     run_id, thread_id, tenant_id, agent, attempt, status, outcome
 * ├── tidemark.step                step_id (a plan's child step nests under its parent step)
 * │   ├── tidemark.model_request   model, chars, chunks, tool_calls, aborted
 * │   └── tidemark.tool_call       tool, tool_call_id, effect, op_id, phase, is_error
 * └── tidemark.cancel              events cancel.received → cancel.aborted → cancel.recorded → cancel.terminal
 * tidemark.recovery, tidemark.drain (roots of their own)
 * ```
 *
 * Attributes carry ids, counts and lengths only: never message text or tool inputs. What text
 * they do carry (an error's message, a cancel's reason) passes through the runtime's redactor:
 * every span is a {@link RedactedSpan}.
 */
import { context, propagation, SpanStatusCode, type Attributes, type Context } from "@opentelemetry/api";
import { isTerminalStatus, type Redactor, type RunRecord, type RunStatus, type StepStatus } from "../core/index.js";
import { ModelError } from "../core/model-error.js";
import { RedactedSpan } from "./redacted-span.js";

export { TRACER_NAME } from "./redacted-span.js";

/** A W3C trace context as it travels in HTTP headers (`traceparent`, and `tracestate` beside it). */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

/**
 * The context a carrier names, through the registered propagator (the SDK's W3C one); without an
 * SDK the API's propagator is a no-op and the context is the active one, unchanged.
 */
function contextOf(carrier: TraceCarrier | undefined): Context {
  if (!carrier?.traceparent) return context.active();
  return propagation.extract(context.active(), carrier);
}

/** The ids every span of a run carries. */
function runIds(run: Pick<RunRecord, "runId" | "threadId" | "tenantId">): Attributes {
  return { "tidemark.run_id": run.runId, "tidemark.thread_id": run.threadId, "tidemark.tenant_id": run.tenantId };
}

/** Marks `span` failed with an error's class and, for a model error, its kind (its message is safe to show). */
function recordFailure(span: RedactedSpan, error: unknown): void {
  if (ModelError.isInstance(error)) {
    span.setAttributes({ "tidemark.error.kind": error.kind, ...(error.status !== undefined ? { "tidemark.error.status": error.status } : {}) });
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
    return;
  }
  span.setAttribute("tidemark.error.type", error instanceof Error ? error.name : typeof error);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

const TERMINAL_STEP: readonly StepStatus[] = ["completed", "failed", "cancelled"];

/** What a model request's span records when it ends. */
export interface ModelRequestEnd {
  chars: number;
  chunks: number;
  toolCalls: number;
  aborted: boolean;
}

/** The span of one model request. */
export interface ModelRequestTrace {
  /** The provider failed (not a Stop). */
  failed(error: unknown): void;
  end(result: ModelRequestEnd): void;
}

/**
 * The span of one run's execution in this process (from its claim), and of its steps, requests,
 * tool calls and cancel. A launch that loses the claim to another leaves no span.
 */
export class RunTracing {
  #span: RedactedSpan | undefined;
  #run: RunRecord;
  readonly #steps = new Map<string, RedactedSpan>();
  readonly #parentSteps = new Map<string, string>();
  readonly #tools = new Map<string, RedactedSpan>();
  #cancel: CancelTrace | undefined;
  #isEnded = false;

  readonly #parent: TraceCarrier | undefined;
  /** What every attribute of the run's spans (and its cancel's) passes through. */
  readonly redactor: Redactor;

  /** `parent`: the trace context of the request that created the run, if it named one. */
  constructor(run: RunRecord, redactor: Redactor, parent?: TraceCarrier) {
    this.#run = run;
    this.redactor = redactor;
    this.#parent = parent;
  }

  /** The run was claimed, as the attempt it executes as: its span starts (a child of the creating request's trace, if any). */
  claimed(run: RunRecord): void {
    this.#run = run;
    const attributes: Attributes = { ...runIds(run), "tidemark.agent": run.agent, "tidemark.attempt": run.attempt };
    this.#span ??= RedactedSpan.start(this.redactor, "tidemark.run", attributes, contextOf(this.#parent));
  }

  /** A plan step declared under `parentStepId`: its span nests under that step's. */
  declareStep(stepId: string, parentStepId: string | null): void {
    if (parentStepId !== null) this.#parentSteps.set(stepId, parentStepId);
  }

  /** A step's status changed: its span starts when it starts and ends when it is terminal. */
  stepStatus(stepId: string, status: StepStatus): void {
    if (status === "in_progress" && !this.#steps.has(stepId)) {
      const parentStepId = this.#parentSteps.get(stepId);
      const parent = (parentStepId !== undefined ? this.#steps.get(parentStepId) : undefined) ?? this.#span;
      const attributes: Attributes = { ...runIds(this.#run), "tidemark.step_id": stepId };
      if (parentStepId !== undefined) attributes["tidemark.parent_step_id"] = parentStepId;
      this.#steps.set(stepId, RedactedSpan.start(this.redactor, "tidemark.step", attributes, parent));
      return;
    }
    const span = this.#steps.get(stepId);
    if (!span || !TERMINAL_STEP.includes(status)) return;
    span.setAttribute("tidemark.step.status", status);
    if (status === "failed") span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  }

  /** Starts the span of a model request made by step `stepId`. */
  modelRequest(stepId: string, request: { model: string; messages: number; tools: number }): ModelRequestTrace {
    const attributes: Attributes = {
      ...runIds(this.#run),
      "tidemark.step_id": stepId,
      "tidemark.model": request.model,
      "tidemark.model_request.messages": request.messages,
      "tidemark.model_request.tools": request.tools,
    };
    const span = RedactedSpan.start(this.redactor, "tidemark.model_request", attributes, this.#steps.get(stepId) ?? this.#span);
    return {
      failed: (error) => recordFailure(span, error),
      end: (result) => {
        span.setAttributes({
          "tidemark.model_request.chars": result.chars,
          "tidemark.model_request.chunks": result.chunks,
          "tidemark.model_request.tool_calls": result.toolCalls,
          "tidemark.model_request.aborted": result.aborted,
        });
        span.end();
      },
    };
  }

  /** Runs a tool call of step `stepId` in its span; an aborted call is not an error. */
  async toolCall<T extends { outcome: { isError: boolean } }>(
    stepId: string,
    call: { tool: string; toolCallId: string; effect: string },
    signal: AbortSignal,
    run: () => Promise<T>,
  ): Promise<T> {
    const attributes: Attributes = {
      ...runIds(this.#run),
      "tidemark.step_id": stepId,
      "tidemark.tool": call.tool,
      "tidemark.tool_call_id": call.toolCallId,
      "tidemark.tool.effect": call.effect,
    };
    const span = RedactedSpan.start(this.redactor, "tidemark.tool_call", attributes, this.#steps.get(stepId) ?? this.#span);
    // One step, one tool call: the step id finds the span for the ledger's phases.
    this.#tools.set(stepId, span);
    try {
      const result = await run();
      span.setAttribute("tidemark.tool.is_error", result.outcome.isError);
      return result;
    } catch (error) {
      if (signal.aborted) span.setAttribute("tidemark.tool.aborted", true);
      else recordFailure(span, error);
      throw error;
    } finally {
      this.#tools.delete(stepId);
      span.end();
    }
  }

  /** A consequential tool call's operation moved to `phase` in the ledger. */
  toolOperation(stepId: string, opId: string, phase: string): void {
    const span = this.#tools.get(stepId);
    if (!span) return;
    span.setAttributes({ "tidemark.op_id": opId, "tidemark.op.phase": phase });
    span.addEvent(`operation.${phase}`);
  }

  /** The run failed: its reason and message (both safe to show) on the run's span. */
  failed(run: RunRecord): void {
    if (run.failureReason) this.#span?.setAttribute("tidemark.failure_reason", run.failureReason);
    this.#span?.setStatus({ code: SpanStatusCode.ERROR, message: run.failureMessage ?? undefined });
  }

  /** Ends the run's span (and its cancel's, at its terminal moment). */
  end(outcome: string, status: RunStatus | undefined): void {
    if (this.#isEnded) return;
    this.#isEnded = true;
    this.#cancel?.terminal(status ?? outcome);
    this.#cancel = undefined;
    // Whatever the plan left open (a step cut by a drain, say) still ends.
    for (const span of [...this.#tools.values(), ...this.#steps.values()]) span.end();
    if (!this.#span) return;
    this.#span.setAttribute("tidemark.outcome", outcome);
    if (status) this.#span.setAttribute("tidemark.status", status);
    this.#span.end();
  }

  /** The span a cancel of this run nests under (none before the claim); the run's end closes the cancel it adopted. */
  adoptCancel(cancel: CancelTrace): RedactedSpan | undefined {
    if (this.#isEnded || !this.#span) return undefined;
    this.#cancel ??= cancel;
    return this.#span;
  }

  /** Whether `cancel` waits for this run's end to close. */
  owns(cancel: CancelTrace): boolean {
    return !this.#isEnded && this.#cancel === cancel;
  }
}

/**
 * The span of one cancel: `cancel.received` → `cancel.aborted` (the work stopped here) →
 * `cancel.recorded` (the store accepted it) → `cancel.terminal` (the run reached its terminal
 * status), each with `elapsed_ms` since the request was received.
 */
export class CancelTrace {
  readonly #span: RedactedSpan;
  readonly #startedAt = performance.now();
  readonly #tracing: RunTracing | undefined;
  #isEnded = false;

  /** `redactor`: the runtime's; a cancel of a run executing here nests under its span (and redacts alike). */
  constructor(run: Pick<RunRecord, "runId" | "tenantId"> & { threadId?: string }, reason: string, tracing: RunTracing | undefined, redactor: Redactor) {
    this.#tracing = tracing;
    const parent = tracing?.adoptCancel(this);
    const attributes: Attributes = { "tidemark.run_id": run.runId, "tidemark.tenant_id": run.tenantId, "tidemark.cancel.reason": reason };
    if (run.threadId !== undefined) attributes["tidemark.thread_id"] = run.threadId;
    this.#span = RedactedSpan.start(redactor, "tidemark.cancel", attributes, parent);
    this.#event("cancel.received");
  }

  #event(name: string, attributes: Attributes = {}): void {
    const elapsed = Math.round((performance.now() - this.#startedAt) * 1000) / 1000;
    this.#span.addEvent(name, { ...attributes, elapsed_ms: elapsed });
  }

  /** The executing work was aborted here (`atRequest`: already, when the cancel's request headers were read). */
  aborted(options: { atRequest?: boolean } = {}): void {
    this.#event("cancel.aborted", options.atRequest ? { "tidemark.cancel.at_request": true } : {});
  }

  /** The store answered: `accepted` / `already_requested` are recorded cancels. */
  recorded(kind: string, run?: RunRecord): void {
    if (run) this.#span.setAttribute("tidemark.thread_id", run.threadId);
    this.#span.setAttribute("tidemark.cancel.result", kind);
    if (kind === "accepted" || kind === "already_requested") this.#event("cancel.recorded");
  }

  /** The run is terminal: the cancel's timeline ends. */
  terminal(status: string): void {
    if (this.#isEnded) return;
    this.#event("cancel.terminal", { "tidemark.status": status });
    this.#end();
  }

  /** The cancel call returned: ends now unless the run executing here ends it at its terminal status. */
  settled(status: RunStatus | undefined): void {
    if (this.#isEnded) return;
    if (status !== undefined && isTerminalStatus(status)) return this.terminal(status);
    if (this.#tracing?.owns(this)) return;
    this.#end();
  }

  /** The cancel could not be recorded. */
  failed(error: unknown): void {
    if (this.#isEnded) return;
    this.#span.setAttribute("tidemark.cancel.result", "not_recorded");
    recordFailure(this.#span, error);
    this.#end();
  }

  #end(): void {
    this.#isEnded = true;
    this.#span.end();
  }
}

/** Runs one recovery of a lost run in a `tidemark.recovery` span; `acted` says whether it changed the run. */
export async function traceRecovery(redactor: Redactor, run: RunRecord, action: string, recover: () => Promise<boolean>): Promise<boolean> {
  const span = RedactedSpan.start(redactor, "tidemark.recovery", {
    ...runIds(run),
    "tidemark.attempt": run.attempt,
    "tidemark.status": run.status,
    "tidemark.recovery.action": action,
  });
  try {
    const acted = await recover();
    span.setAttribute("tidemark.recovery.acted", acted);
    return acted;
  } catch (error) {
    recordFailure(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Runs a drain in a `tidemark.drain` span, with how many runs it handed back and whether they settled in time. */
export async function traceDrain(redactor: Redactor, runs: number, drain: () => Promise<boolean>): Promise<boolean> {
  const span = RedactedSpan.start(redactor, "tidemark.drain", { "tidemark.drain.runs": runs });
  try {
    const isSettled = await drain();
    span.setAttribute("tidemark.drain.settled", isSettled);
    return isSettled;
  } finally {
    span.end();
  }
}
