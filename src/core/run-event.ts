import type { CheckpointKind, MessageRole, OperationPhase, StepStatus, ToolEffect } from "./records.js";
import type { FailureReason, RunStatus } from "./run-status.js";
import type { StatsView } from "./stats-view.js";

/** Fields every event carries: the run's gapless `seq` is also the SSE `id`. */
interface EventBase {
  seq: number;
  run_id: string;
}

/** What external systems were handed before a cancel took effect. */
export interface ExternalEffect {
  op_id: string;
  tool: string;
  phase: OperationPhase;
}

/** One event of a run's stream (DESIGN §7), keyed on `type`. */
export type RunEvent = EventBase &
  (
    | { type: "run.started"; thread_id: string; attempt: number; status: RunStatus }
    /** `format: "json"` marks a structured step's object as it forms: shown, never published unless complete and valid. */
    | { type: "message.delta"; message_id: string; text: string; format?: "json" }
    | { type: "message.published"; message_id: string; state_version: number; checkpoint_id: string; role: MessageRole }
    | { type: "checkpoint.saved"; checkpoint_id: string; state_version: number; kind: CheckpointKind }
    /** One result a collecting step received and shows (`step.collect`); `item` is the result itself. */
    | { type: "results.added"; step_id: string; result_id: string; item: unknown }
    /** A Continue repeated a collecting step a Stop had cut: the set the Stop confirmed, and how the new one differs. */
    | {
        type: "results.updated";
        step_id: string;
        confirmed_result_ids: string[];
        result_ids: string[];
        added_result_ids: string[];
        removed_result_ids: string[];
      }
    | { type: "tool.started"; tool_call_id: string; tool: string; effect: ToolEffect | "unknown" }
    | { type: "tool.prepared"; tool_call_id: string; tool: string; op_id: string; idempotency_key: string; preview: unknown }
    | { type: "tool.committed"; tool_call_id: string; tool: string; op_id: string; phase: "committed" | "failed" }
    | { type: "tool.result"; tool_call_id: string; tool: string; message_id: string; is_error: boolean; reused: boolean }
    | { type: "run.interrupted"; op_id: string; tool: string; idempotency_key: string; preview: unknown }
    | { type: "run.resumed"; op_id: string; decision: "approved" | "rejected" }
    | { type: "run.cancel_requested"; reason: string; accepted_state_version: number; resume_checkpoint_id: string }
    | { type: "run.cancelling"; active_operation: string | null; steps?: string[] }
    | {
        type: "step.updated";
        step_id: string;
        status: StepStatus;
        depends_on: string[];
        title: string | null;
        parent_step_id: string | null;
        checkpoint_id: string | null;
        reused: boolean;
      }
    | {
        type: "run.cancelled";
        reason: string;
        resume_checkpoint_id: string | null;
        discarded_stream_chars: number;
        external_effects: ExternalEffect[];
      }
    | { type: "run.completed"; state_version: number; published_message_id: string | null }
    | { type: "run.failed"; reason: FailureReason; message: string }
    | { type: "stats.updated"; thread_stats: StatsView; run_stats: StatsView }
  );

/** The type names of run events. */
export type RunEventType = RunEvent["type"];

/** An event before the buffer stamps it with its `seq`. */
export type RunEventDraft = RunEvent extends infer E ? (E extends RunEvent ? Omit<E, "seq"> : never) : never;

/** The event types that end a run's stream. */
export const TERMINAL_EVENT_TYPES = ["run.completed", "run.cancelled", "run.failed"] as const;

/** Whether `type` ends the stream. */
export function isTerminalEventType(type: string): boolean {
  return (TERMINAL_EVENT_TYPES as readonly string[]).includes(type);
}
