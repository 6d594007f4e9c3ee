/**
 * Tool definitions (DESIGN §6): a boundary before irreversible action. Every tool declares its
 * effect; a consequential tool names its business action with an idempotency key, may preview
 * it, may need approval, commits once per key, and can confirm an unknown outcome.
 */
import type { z } from "zod";


export type { ToolEffect } from "../core/records.js";

/** What a tool receives besides its input. */
export interface ToolContext {
  tenantId: string;
  threadId: string;
  runId: string;
  toolCallId: string;
  /** Aborted on Stop. A commit already handed over gets a signal that a Stop does not abort. */
  signal: AbortSignal;
}

interface ToolBase<Input> {
  name: string;
  description: string;
  /** Validates the model's input; an invalid input becomes an error result, never a call. */
  input: z.ZodType<Input>;
}

/** A read-only or safely repeatable tool. */
export interface ReadTool<Input = unknown, Output = unknown> extends ToolBase<Input> {
  effect: "none" | "idempotent";
  /** Whether `execute` stops promptly when its signal aborts (default true); if not, a Stop awaits it. */
  honoursSignal?: boolean;
  execute(input: Input, context: ToolContext): Promise<Output>;
}

/** What `status` learned about a key whose outcome was unknown. */
export type OperationStatus<Output> = { outcome: "committed"; result: Output } | { outcome: "not_committed" } | { outcome: "unknown" };

/** A tool with consequences (send, pay, book). */
export interface ConsequentialTool<Input = unknown, Output = unknown, Preview = unknown> extends ToolBase<Input> {
  effect: "consequential";
  /** `required` pauses the run (`interrupted`) until the user approves or rejects. */
  approval: "required" | "never";
  /** Names the business action, not the attempt: the same action always gets the same key. */
  idempotencyKey(input: Input, context: Omit<ToolContext, "signal">): string;
  /** An optional preview of what the commit will do (shown for approval). */
  prepare?(input: Input, context: ToolContext): Promise<Preview>;
  /** Hands the action to the external system; called at most once per key. */
  commit(input: Input, context: ToolContext & { idempotencyKey: string }): Promise<Output>;
  /** Asks the external system what happened to a key whose outcome is unknown (after a crash). */
  status?(idempotencyKey: string, context: { tenantId: string; threadId: string; signal: AbortSignal }): Promise<OperationStatus<Output>>;
}

/** Any tool. */
export type Tool = ReadTool<any, unknown> | ConsequentialTool<any, unknown, unknown>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Declares a tool with its types inferred (an identity function for type checking). */
export function defineTool<Input, Output>(tool: ReadTool<Input, Output>): ReadTool<Input, Output>;
export function defineTool<Input, Output, Preview>(tool: ConsequentialTool<Input, Output, Preview>): ConsequentialTool<Input, Output, Preview>;
export function defineTool(tool: Tool): Tool {
  return tool;
}
