/**
 * The AG-UI events this layer sends (`@ag-ui/core` 1.0 names and fields), written here rather than
 * imported: the client packages are test dependencies, and the wire is what has to match.
 */

/** An interrupt of a `RUN_FINISHED` with the `interrupt` outcome: here, a tool awaiting approval. */
export interface AgUiInterrupt {
  id: string;
  reason: string;
  message?: string;
  toolCallId?: string;
  metadata?: Record<string, unknown>;
}

/** Why a run ended (absent on the wire means success). */
export type AgUiRunOutcome = { type: "success" } | { type: "interrupt"; interrupts: AgUiInterrupt[] } | { type: "cancelled" };

/** One AG-UI event, keyed on `type`. */
export type AgUiEvent =
  | { type: "RUN_STARTED"; threadId: string; runId: string; metadata?: Record<string, unknown> }
  | { type: "RUN_FINISHED"; threadId: string; runId: string; outcome: AgUiRunOutcome; result?: unknown; metadata?: Record<string, unknown> }
  | { type: "RUN_ERROR"; message: string; code: string }
  | { type: "TEXT_MESSAGE_START"; messageId: string; role: "assistant" }
  | { type: "TEXT_MESSAGE_CONTENT"; messageId: string; delta: string }
  | { type: "TEXT_MESSAGE_END"; messageId: string }
  | { type: "TOOL_CALL_START"; toolCallId: string; toolCallName: string; parentMessageId?: string }
  | { type: "TOOL_CALL_ARGS"; toolCallId: string; delta: string }
  | { type: "TOOL_CALL_END"; toolCallId: string }
  | { type: "TOOL_CALL_RESULT"; messageId: string; toolCallId: string; content: string; role: "tool" }
  | { type: "STATE_SNAPSHOT"; snapshot: unknown };

/** The SSE frame of one event: one `data:` line (JSON.stringify never writes a raw newline). */
export function formatAgUiFrame(event: AgUiEvent): string {
  return `data: ${JSON.stringify(event)}\n\n`;
}
