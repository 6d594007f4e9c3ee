/**
 * Agents as code (DESIGN §11): a team's own agent logic, deployed with the server. An agent's work
 * is explicit steps; each step is one transition, with its own checkpoint when it completes, run in
 * its own child scope of the run's cancel scope. Steps declare dependencies and run concurrently
 * under a limit. A Continue after a Stop never runs a completed step again (its result is reused);
 * the step that was cut runs again from its confirmed inputs.
 *
 * @example
 * export default defineAgent({
 *   name: "summarise",
 *   description: "Summarises each document, then all of them.",
 *   configSchema: z.object({ documents: z.array(z.string()).min(1) }),
 *   steps: ({ config }) => [
 *     ...config.documents.map((doc, i) => ({
 *       id: `doc-${i + 1}`,
 *       title: `Summary of document ${i + 1}`,
 *       input: doc,
 *       run: async (step) => step.publish(await step.generate({ messages: [{ role: "user", content: `Summarise: ${doc}` }] }), { label: `Document ${i + 1}` }),
 *     })),
 *     {
 *       id: "overall",
 *       dependsOn: config.documents.map((_, i) => `doc-${i + 1}`),
 *       run: async (step) => { ... step.result<PublishedStep>("doc-1").content ... },
 *     },
 *   ],
 * });
 */
import type { z } from "zod";
import type { ModelMessage, ModelToolDefinition, ModelUsage, ToolCall } from "../core/model.js";
import type { MessageFormat, ToolEffect } from "../core/records.js";
import { AgentDefinitionError } from "./agent-definition-error.js";

/** What every step and the agent's `steps()` see of the run. */
export interface AgentRunContext<Config = unknown> {
  readonly runId: string;
  readonly threadId: string;
  /** The run's config, as the agent's schema parsed it. */
  readonly config: Config;
  /** The request: the thread's last user message (a Continue keeps the stopped run's). */
  readonly input: string;
  /** The thread's confirmed history as model context (unanswered tool calls carry their outcome). */
  readonly messages: readonly ModelMessage[];
  /** The tools the model may be offered, with their effect (DESIGN §6). */
  readonly tools: readonly AgentTool[];
}

/** A tool as an agent sees it. */
export interface AgentTool extends ModelToolDefinition {
  readonly effect: ToolEffect;
}

/** A generation a step streamed; kept only if the step publishes it (or returns what it learned). */
export interface StepGeneration {
  readonly messageId: string;
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
  readonly usage: ModelUsage | undefined;
}

/**
 * A structured generation (`generateObject`): the whole text parsed and validated against the
 * step's schema. There is no partial one: a generation cut short or of the wrong shape throws.
 */
export interface StepObject<T = unknown> {
  readonly messageId: string;
  /** The object, as the schema parsed it. */
  readonly object: T;
  /** The JSON text the model streamed. */
  readonly text: string;
  readonly usage: ModelUsage | undefined;
}

/** What `collect` gathered: every result shown, in order, and how it differs from a Stop's confirmed set. */
export interface CollectedResults<T> {
  readonly items: readonly T[];
  readonly resultIds: readonly string[];
  /**
   * On a Continue that repeated this step after a Stop cut it: the set the Stop confirmed and the
   * change (also sent as `results.updated`); null when there was no such Stop.
   */
  readonly update: ResultSetUpdate | null;
}

/** How a repeated collection's set differs from the one a Stop confirmed. */
export interface ResultSetUpdate {
  readonly confirmedResultIds: readonly string[];
  readonly addedResultIds: readonly string[];
  readonly removedResultIds: readonly string[];
}

/** The result of a step that completed by publishing a message. */
export interface PublishedStep {
  readonly messageId: string;
  readonly content: string;
  readonly label: string | null;
  /** `json` when the step published a structured object (`content` is its JSON). */
  readonly format: MessageFormat;
}

/** What one tool call produced. */
export interface StepToolOutcome {
  readonly content: string;
  readonly isError: boolean;
}

/** What a running step may do. */
export interface StepRunContext<Config = unknown> extends AgentRunContext<Config> {
  readonly stepId: string;
  /** Aborted when the run is stopped (or the plan halts): honour it, and clean up in `finally`. */
  readonly signal: AbortSignal;
  /** The result of a completed step this one depends on (a `PublishedStep` for one that published). */
  result<T = unknown>(stepId: string): T;
  /**
   * Streams one model generation into the run's stream (`message.delta`). It is not kept unless the
   * step publishes it; a Stop discards it (only its length is recorded).
   */
  generate(request: { messages: readonly ModelMessage[]; offerTools?: boolean }): Promise<StepGeneration>;
  /**
   * Streams one model generation that must be a JSON object matching `schema` (the provider is asked
   * for it: OpenAI `response_format`); the deltas show the object forming (`message.delta` with
   * `format: "json"`). Resolves only when the whole text parses and validates; otherwise the step
   * fails with `invalid_structured_output`. A Stop discards it like any generation: nothing is
   * published, and a fragment saved of it is labelled not usable for execution.
   */
  generateObject<T>(request: { messages: readonly ModelMessage[]; schema: z.ZodType<T>; name?: string }): Promise<StepObject<T>>;
  /**
   * The object of a published structured message (`format: "json"`), by id or as a step's result,
   * validated by `schema` when given: the one way a step takes a message as the input of its work
   * (a tool call's, say). A saved fragment, a deleted message or text throws
   * `not_usable_for_execution`.
   */
  objectOf<T = unknown>(message: string | PublishedStep, schema?: z.ZodType<T>): T;
  /**
   * Completes this step's own work by publishing one message (with its checkpoint, one
   * transition); the step's result is that message. At most once per step. With `final`, the
   * message is the run's answer and the run completes in the same transaction (so a Stop after it
   * is "too late"): use it only on the plan's last step.
   */
  publish(content: string | StepGeneration | StepObject, options?: { label?: string; final?: boolean }): Promise<PublishedStep>;
  /**
   * Collects results that arrive one at a time (search records, say) from `source`, which must
   * honour its signal: each is shown as it arrives (`results.added`, with `id(item)`), and the set
   * shown is what a Stop confirms (the cancel's checkpoint keeps its ids); a result arriving after
   * the Stop is dropped. On a Continue the step runs again and `update` (and the event
   * `results.updated`) says how the new set differs from the confirmed one. Return the items (or
   * publish them) to complete the step.
   */
  collect<T>(source: (signal: AbortSignal) => AsyncIterable<T>, options: { id(item: T): string }): Promise<CollectedResults<T>>;
  /** Runs one tool call through the ledger (DESIGN §6) and publishes its result, completing this step. */
  callTool(call: ToolCall): Promise<StepToolOutcome>;
  /** Adds a step that belongs to this one (this step ends only after it); only while `run` is unsettled. */
  addStep(step: AgentStep<Config>): void;
}

/** One step of an agent's plan. */
export interface AgentStep<Config = unknown> {
  /** Stable across a Continue: a completed step with this id (and the same input) is reused, not run. */
  readonly id: string;
  readonly title?: string;
  readonly dependsOn?: readonly string[];
  /**
   * The JSON the step's work depends on: a Continue reuses a completed step only when its input
   * hashes the same. Omit it for a step whose work depends only on its id and dependencies.
   */
  readonly input?: unknown;
  /**
   * The step's work. It completes either by `publish` (or `callTool`), or by returning a JSON value:
   * its result, saved with a `step_completed` checkpoint (`undefined` saves `null`).
   */
  run(step: StepRunContext<Config>): Promise<unknown>;
  /** Steps that follow from this step's result; called also when a Continue reuses the step. */
  next?(result: unknown, context: AgentRunContext<Config>): readonly AgentStep<Config>[];
}

/** An agent: a name, an optional config schema, and the steps a run starts with. */
export interface AgentDefinition<Config = unknown> {
  /** Lower-case letters, digits, `-` and `_`, 1–64 characters; what a run's `agent` names. */
  readonly name: string;
  readonly description?: string;
  /** Validates a run's `config` (absent config is validated as `{}`); served as JSON Schema. */
  readonly configSchema?: z.ZodType<Config>;
  /** How many steps may run at once (default 4). */
  readonly concurrency?: number | ((config: Config) => number);
  /**
   * Whether a Continue rebuilds the run from the thread's history (the chat loop: the model sees
   * what was kept) instead of reusing completed steps by id. Default false.
   */
  readonly continuesFromHistory?: boolean;
  /** The steps the run starts with. */
  steps(context: AgentRunContext<Config>): readonly AgentStep<Config>[];
}

/** Any agent, whatever its config type. */
export type Agent = AgentDefinition<any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const AGENT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Declares an agent, checking its shape at once (a deploy fails early, not on the first run). */
export function defineAgent<Config>(agent: AgentDefinition<Config>): AgentDefinition<Config> {
  if (typeof agent !== "object" || agent === null) throw new AgentDefinitionError(String(agent), "an agent must be an object");
  if (typeof agent.name !== "string" || !AGENT_NAME.test(agent.name)) {
    throw new AgentDefinitionError(String(agent.name), "an agent's name must be 1–64 lower-case letters, digits, '-' or '_'");
  }
  if (typeof agent.steps !== "function") throw new AgentDefinitionError(agent.name, "an agent needs a steps(context) function");
  if (agent.configSchema !== undefined && typeof (agent.configSchema as { safeParse?: unknown }).safeParse !== "function") {
    throw new AgentDefinitionError(agent.name, "configSchema must be a zod schema");
  }
  return agent;
}
