/**
 * The server's JSON shapes as a client sees them (snake_case, exactly as sent; DESIGN §8,
 * docs/api.md). Written out by hand so that the client never imports server code.
 */
import type { CheckpointKind, ResumePolicy } from "../core/records.js";
import type { FailureReason, RunStatus } from "../core/run-status.js";
import type { StatsView } from "../core/stats-view.js";

/** A thread's or run's counts (DESIGN §10): core's wire shape, shared with `stats.updated`. */
export type { StatsView };

/** `GET /v1/threads/{id}`, `POST /v1/threads` and a fork's reply (which adds `history_url`). */
/** `GET /v1/threads`: one page, most recently updated first. */
export interface ThreadPage {
  threads: ThreadView[];
  next_cursor: string | null;
}

export interface ThreadView {
  thread_id: string;
  state_version: number;
  status: "idle" | "busy";
  head_checkpoint_id: string;
  active_run_id: string | null;
  title: string | null;
  metadata: Record<string, unknown>;
  stats: StatsView;
  forked_from: { thread_id: string; checkpoint_id: string; state_version: number } | null;
  created_at: string;
  updated_at: string;
  /** Only in a fork's reply. */
  history_url?: string;
}

/** The status model of a run: `GET /v1/runs/{id}`. */
export interface RunView {
  run_id: string;
  thread_id: string;
  status: RunStatus;
  state_version: number;
  attempt: number;
  model: string;
  /** The agent executing the run (`GET /v1/agents`). */
  agent: string;
  /** The run's config as its agent's schema parsed it; null for none. */
  config: unknown;
  base_checkpoint_id: string;
  input_message_id: string | null;
  cancel_requested_at: string | null;
  cancel_reason: string | null;
  resume_checkpoint_id: string | null;
  published_message_id: string | null;
  active_operation: string | null;
  failure_reason: FailureReason | null;
  failure_message: string | null;
  on_disconnect: "continue" | "cancel";
  recovery_policy: "fail" | "resume";
  stats: StatsView;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  events_url: string;
}

/** The reply to `POST /v1/runs/{id}/cancel`: the version and checkpoint to build on now. */
export interface CancelView {
  run_id: string;
  status: RunStatus;
  already_terminal: boolean;
  pending_creation: boolean;
  accepted_state_version: number | null;
  resume_checkpoint_id: string | null;
  published_message_id: string | null;
  /** Only with `?wait=`: the run was not terminal when the wait ran out. */
  wait_timed_out?: boolean;
}

/** One message of history (a user input, a published answer, a tool result or a saved fragment). */
export interface MessageView {
  message_id: string;
  role: "user" | "assistant" | "system" | "tool";
  content: string;
  run_id: string | null;
  state_version: number;
  checkpoint_id: string;
  publication_status: "published" | "fragment" | "deleted";
  tool_calls: { tool_call_id: string; tool_name: string; input: string }[] | null;
  tool_call_id: string | null;
  tool_name: string | null;
  /** A labelled block's label (one plan subtask's finished section); null for a plain message. */
  label: string | null;
  /** A live turn's answer cut by an interruption: exactly what the user heard of it. */
  interrupted: boolean;
  /** `json`: a structured step's object (published only complete and valid), or a fragment of one. */
  format: "text" | "json";
  /** False for a saved fragment (a stopped object's above all): never a tool's or an agent's input. */
  usable_for_execution: boolean;
  position: number;
  created_at: string;
}

/** Where a step of a run's plan is (DESIGN §11); the last three are terminal. */
export type StepStatusView = "not_started" | "in_progress" | "children_in_progress" | "completed" | "failed" | "cancelled";

/** One step of `GET /v1/runs/{id}/steps`. */
export interface StepView {
  step_id: string;
  status: StepStatusView;
  depends_on: string[];
  parent_step_id: string | null;
  title: string | null;
  started_at: string | null;
  ended_at: string | null;
  checkpoint_id: string | null;
  message_id: string | null;
  result: unknown;
  /** Set when a Continue reused this step's result instead of running it again. */
  reused_from_run_id: string | null;
  error: string | null;
}

/** `GET /v1/runs/{id}/steps`. */
export interface RunStepsView {
  run_id: string;
  status: RunStatus;
  steps: StepView[];
}

/** One agent of `GET /v1/agents`. */
export interface AgentView {
  name: string;
  description: string | null;
  config_schema: Record<string, unknown>;
}

/** `GET /v1/agents`: the deployed agents a run may name. */
export interface AgentListView {
  agents: AgentView[];
}

/** The reply to `DELETE /v1/threads/{id}/messages/{message_id}`. */
export interface DeletedMessageView {
  message_id: string;
  publication_status: "deleted";
  state_version: number;
  checkpoint_id: string;
}

/** One row of the operation ledger. */
export interface OperationView {
  op_id: string;
  tool: string;
  tool_call_id: string;
  idempotency_key: string;
  phase: "prepared" | "committing" | "committed" | "failed" | "abandoned" | "outcome_unknown";
  run_id: string;
  input: string;
  preview: unknown;
  result: unknown;
  error: string | null;
  commit_attempts: number;
  created_at: string;
  updated_at: string;
  /** Set once the row outlived its retention: the key is then its sha256, and input, preview, result and error are gone. */
  reduced_at: string | null;
  /** A reduced committed operation's result type, in place of the result. */
  result_kind: string | null;
}

/** What history tells a client it may offer beside the messages. */
export type HistoryMarker =
  | {
      type: "interrupted_response";
      label: string;
      run_id: string | null;
      checkpoint_id: string;
      state_version: number;
      discarded_stream_chars: number | null;
    }
  | { type: "fragment"; label: string; message_id: string; run_id: string | null }
  | { type: "operation_unconfirmed"; label: string; op_id: string; tool: string; confirm_url: string };

/** `GET /v1/threads/{id}/history`: the visible result. */
export interface HistoryView {
  thread_id: string;
  state_version: number;
  head_checkpoint_id: string;
  messages: MessageView[];
  has_earlier: boolean;
  operations: OperationView[];
  markers: HistoryMarker[];
}

/** One checkpoint of `GET /v1/threads/{id}/checkpoints`. */
export interface CheckpointView {
  checkpoint_id: string;
  parent_checkpoint_id: string | null;
  state_version: number;
  kind: CheckpointKind;
  run_id: string | null;
  message_id: string | null;
  completed_step_id: string | null;
  pending_step: { step_id: string; kind: "model" | "tool"; input_hash: string } | null;
  resume_policy: ResumePolicy | null;
  cancelled_generation: {
    discarded_stream_chars: number;
    discarded_output_tokens: number;
    tokens_estimated: boolean;
    /** The result sets collecting steps had shown when the Stop came; later arrivals are only counted. */
    confirmed_results: { step_id: string; result_ids: string[]; is_complete: boolean; arrived_after_stop: number }[];
  } | null;
  created_at: string;
}

/** The body of `POST /v1/threads/{id}/runs`. */
export interface StartRunBody {
  /** The user's message; leave it out with `resume_from_checkpoint_id` to run the stopped step again. */
  input?: { role: "user"; content: string };
  /** The agent to run (`GET /v1/agents`; default `chat`). A Continue without it keeps the stopped run's. */
  agent?: string;
  /** The agent's config, validated by its schema (400 `invalid_config`). A Continue without it keeps the stopped run's. */
  config?: Record<string, unknown>;
  run_id?: string;
  expected_state_version?: number;
  on_disconnect?: "continue" | "cancel";
  multitask?: "reject" | "interrupt" | "enqueue";
  resume_from_checkpoint_id?: string;
  recovery_policy?: "fail" | "resume";
}

/** The body of every error reply. */
export interface ErrorBody {
  error: string;
  message: string;
  [detail: string]: unknown;
}
