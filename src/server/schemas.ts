/** Request and response schemas: validation and the OpenAPI 3.1 document come from these. */
import { z } from "@hono/zod-openapi";
import { ERROR_CODES, RUN_STATUSES } from "../core/index.js";
import { pathId } from "./path-id.js";
import { decodeThreadCursor } from "./thread-cursor.js";

export const ErrorSchema = z
  .object({
    error: z.enum(Object.keys(ERROR_CODES) as [keyof typeof ERROR_CODES]).openapi({ example: "run_in_progress" }),
    message: z.string(),
  })
  .catchall(z.unknown())
  .openapi("Error");

export const StatsSchema = z
  .object({
    message_count: z.number().int(),
    llm_call_count: z.number().int(),
    tool_call_count: z.number().int(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    tokens_estimated: z.boolean(),
    discarded_generation_count: z.number().int(),
    discarded_stream_chars: z.number().int(),
    discarded_output_tokens: z.number().int(),
  })
  .openapi("Stats");

export const ThreadSchema = z
  .object({
    thread_id: z.string().openapi({ example: "thr_01jd8x0f1ae2rbv7c9ks0d8m5q" }),
    state_version: z.number().int(),
    status: z.enum(["idle", "busy"]),
    head_checkpoint_id: z.string(),
    active_run_id: z.string().nullable(),
    title: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    stats: StatsSchema,
    forked_from: z
      .object({ thread_id: z.string(), checkpoint_id: z.string(), state_version: z.number().int() })
      .nullable()
      .openapi({ description: "Where a branch was forked from (the thread owning the fork checkpoint); null for a root thread." }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("Thread");

export const ThreadListSchema = z
  .object({
    threads: z.array(ThreadSchema).openapi({ description: "Most recently updated first (ties: the greater thread_id first)." }),
    next_cursor: z
      .string()
      .nullable()
      .openapi({ description: "Pass it as `before` for the next page; null when this page is the last." }),
  })
  .openapi("ThreadList");

export const RunSchema = z
  .object({
    run_id: z.string().openapi({ example: "run_01jd8x0f1ae2rbv7c9ks0d8m5q" }),
    thread_id: z.string(),
    status: z.enum(RUN_STATUSES),
    state_version: z.number().int(),
    attempt: z.number().int(),
    model: z.string(),
    agent: z.string().openapi({ description: "The agent executing the run (GET /v1/agents)." }),
    config: z.unknown().nullable().openapi({ description: "The run's config as its agent's schema parsed it (defaults filled in); null for none." }),
    base_checkpoint_id: z.string(),
    input_message_id: z.string().nullable(),
    cancel_requested_at: z.string().nullable(),
    cancel_reason: z.string().nullable(),
    resume_checkpoint_id: z.string().nullable(),
    published_message_id: z.string().nullable(),
    active_operation: z.string().nullable(),
    failure_reason: z.string().nullable(),
    failure_message: z.string().nullable(),
    on_disconnect: z.enum(["continue", "cancel"]),
    recovery_policy: z.enum(["fail", "resume"]),
    stats: StatsSchema,
    created_at: z.string(),
    started_at: z.string().nullable(),
    ended_at: z.string().nullable(),
    events_url: z.string(),
  })
  .openapi("Run");

export const MessageSchema = z
  .object({
    message_id: z.string(),
    role: z.enum(["user", "assistant", "system", "tool"]),
    content: z.string(),
    run_id: z.string().nullable(),
    state_version: z.number().int(),
    checkpoint_id: z.string(),
    publication_status: z.enum(["published", "fragment", "deleted"]),
    tool_calls: z.array(z.object({ tool_call_id: z.string(), tool_name: z.string(), input: z.string() })).nullable(),
    tool_call_id: z.string().nullable(),
    tool_name: z.string().nullable(),
    label: z.string().nullable().openapi({ description: "A labelled block's label (e.g. one plan subtask's finished section); null for a plain message." }),
    interrupted: z.boolean().openapi({ description: "A live turn's answer cut by an interruption: the content is exactly what the user heard (DESIGN §12)." }),
    format: z.enum(["text", "json"]).openapi({ description: "`json`: a structured step's object (published only complete and valid), or a fragment of one." }),
    usable_for_execution: z.boolean().openapi({
      description: "Whether a tool or an agent may take this message as input: false for a saved fragment (of an object above all) and a deleted message.",
    }),
    position: z.number().int(),
    created_at: z.string(),
  })
  .openapi("Message");

export const CheckpointSchema = z
  .object({
    checkpoint_id: z.string(),
    parent_checkpoint_id: z.string().nullable(),
    state_version: z.number().int(),
    kind: z.string(),
    run_id: z.string().nullable(),
    message_id: z.string().nullable(),
    completed_step_id: z.string().nullable(),
    pending_step: z.object({ step_id: z.string(), kind: z.string(), input_hash: z.string() }).nullable(),
    resume_policy: z.string().nullable(),
    cancelled_generation: z
      .object({
        discarded_stream_chars: z.number(),
        discarded_output_tokens: z.number(),
        tokens_estimated: z.boolean(),
        confirmed_results: z
          .array(z.object({ step_id: z.string(), result_ids: z.array(z.string()), is_complete: z.boolean(), arrived_after_stop: z.number().int() }))
          .openapi({ description: "The result sets collecting steps had shown when the Stop came (the confirmed sets); later arrivals are only counted." }),
      })
      .nullable(),
    created_at: z.string(),
  })
  .openapi("Checkpoint");

/** A title a user chose: trimmed, 1–200 characters, no control characters. */
const ThreadTitle = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .regex(/^[^\p{Cc}]*$/u, "must not contain control characters")
  // The pattern as JSON Schema writes it (the generator would append the regex's `/u` flag to it).
  .openapi({ description: "Trimmed, 1–200 characters, no control characters. The automatic title never replaces it.", pattern: "^[^\\p{Cc}]*$" });

export const CreateThreadBody = z
  .strictObject({ title: ThreadTitle.optional(), metadata: z.record(z.string(), z.unknown()).optional() })
  .openapi("CreateThreadRequest");

export const RenameThreadBody = z.strictObject({ title: ThreadTitle }).openapi("RenameThreadRequest");

/** The user's message that starts a run. */
const RunInputSchema = z.strictObject({
  role: z.literal("user"),
  content: z.string().min(1).max(100_000),
});

export const CreateRunBody = z
  .strictObject({
    input: RunInputSchema.optional()
      .openapi({ description: "The user's message. Omit it only with resume_from_checkpoint_id: the stopped step then runs again." }),
    run_id: z.string().max(100).optional().openapi({ description: "Name the run yourself (a `run_…` id); a repeat returns the same run." }),
    expected_state_version: z.number().int().min(0).optional(),
    on_disconnect: z.enum(["continue", "cancel"]).optional(),
    multitask: z.enum(["reject", "interrupt", "rollback", "enqueue"]).optional().openapi({
      description:
        "On a busy thread: `reject` (default, 409 run_in_progress), `interrupt` (cancel the active run, wait until it is terminal, then start), `rollback` (as interrupt, and take the stopped run's input back first) or `enqueue` (start when the runs before it have ended, in order).",
    }),
    resume_from_checkpoint_id: z.string().min(1).max(100).optional().openapi({
      description: "Continue from this checkpoint; it must be the thread's head (an older one answers 409 with a fork suggestion).",
    }),
    recovery_policy: z.enum(["fail", "resume"]).optional().openapi({
      description: "What to do if the process running it dies: fail with worker_lost (default) or resume from the last checkpoint.",
    }),
    agent: z.string().min(1).max(64).optional().openapi({
      description: "The agent to run (GET /v1/agents; default `chat`). A Continue without it keeps the stopped run's agent.",
    }),
    config: z.record(z.string(), z.unknown()).optional().openapi({
      description: "The agent's config, validated by its schema (400 invalid_config). A Continue without it keeps the stopped run's.",
    }),
  })
  .openapi("CreateRunRequest");

export const CreateRunInNewThreadBody = CreateRunBody.pick({ run_id: true, on_disconnect: true, recovery_policy: true, agent: true, config: true })
  .extend({
    input: RunInputSchema.openapi({ description: "The user's message: the first of the new thread." }),
    thread: CreateThreadBody.optional().openapi({ description: "The new thread's title (never replaced by the automatic one) and metadata." }),
  })
  .openapi("CreateRunInNewThreadRequest");

export const StepSchema = z
  .object({
    step_id: z.string(),
    status: z.enum(["not_started", "in_progress", "children_in_progress", "completed", "failed", "cancelled"]),
    depends_on: z.array(z.string()),
    parent_step_id: z.string().nullable(),
    title: z.string().nullable(),
    started_at: z.string().nullable(),
    ended_at: z.string().nullable(),
    checkpoint_id: z.string().nullable().openapi({ description: "The checkpoint that made the step's own work durable." }),
    message_id: z.string().nullable().openapi({ description: "The message the step published as its result, if any." }),
    result: z.unknown().nullable(),
    reused_from_run_id: z.string().nullable().openapi({ description: "Set when a Continue reused this step's result instead of running it." }),
    error: z.string().nullable(),
  })
  .openapi("Step");

export const RunStepsResponse = z.object({ run_id: z.string(), status: z.enum(RUN_STATUSES), steps: z.array(StepSchema) }).openapi("RunSteps");

export const AgentSchema = z
  .object({ name: z.string(), description: z.string().nullable(), config_schema: z.record(z.string(), z.unknown()) })
  .openapi("Agent");

export const AgentListResponse = z.object({ agents: z.array(AgentSchema) }).openapi("AgentList");

export const CancelRunBody = z
  .strictObject({
    reason: z.string().min(1).max(200).optional(),
    expected_state_version: z.number().int().min(0).optional(),
  })
  .openapi("CancelRunRequest");

export const CancelRunResponse = z
  .object({
    run_id: z.string(),
    status: z.enum(RUN_STATUSES),
    already_terminal: z.boolean(),
    pending_creation: z.boolean(),
    accepted_state_version: z.number().int().nullable(),
    resume_checkpoint_id: z.string().nullable(),
    published_message_id: z.string().nullable(),
    wait_timed_out: z.boolean().optional(),
  })
  .openapi("CancelRunResponse");

export const ThreadIdParam = z.object({ thread_id: pathId("thr") });
export const RunIdParam = z.object({ run_id: pathId("run") });
export const HistoryQuery = z.object({
  limit: z.string().regex(/^[1-9]\d{0,5}$/).optional().openapi({
    description: "Only the last N messages (deleted drafts count toward N but are not listed); default all.",
  }),
});

/** The default and largest page of `GET /v1/threads` (the `limit` pattern below allows 1–100). */
export const THREAD_PAGE_DEFAULT = 20;
export const THREAD_PAGE_MAX = 100;
export const ListThreadsQuery = z.object({
  limit: z
    .string()
    .regex(/^(?:[1-9]\d?|100)$/, `must be a whole number from 1 to ${THREAD_PAGE_MAX}`)
    .optional()
    .openapi({ description: `Threads per page, 1–${THREAD_PAGE_MAX} (default ${THREAD_PAGE_DEFAULT}).` }),
  before: z
    .string()
    // One check, one issue: a cursor too long to be one does not decode either.
    .refine((value) => decodeThreadCursor(value) !== undefined, "is not a cursor from next_cursor")
    .optional()
    .openapi({ description: "The previous page's `next_cursor`: the page of threads after it. Absent: the first page." }),
});

export const EventsQuery = z.object({
  after: z.string().regex(/^\d{1,16}$/).optional().openapi({ description: "Replay events after this seq (like Last-Event-ID)." }),
});
export const CancelQuery = z.object({
  wait: z.string().regex(/^\d{1,6}$/).optional().openapi({ description: "Wait up to this many ms (max 60000) until the run is terminal." }),
});

/** JSON error responses every route can give. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(
    statuses.map((status) => [status, { description: "Error", content: { "application/json": { schema: ErrorSchema } } }]),
  );
}

/** A JSON content entry for a route definition. */
export const json = <T>(schema: T) => ({ "application/json": { schema } });

export const OperationSchema = z
  .object({
    op_id: z.string(),
    tool: z.string(),
    tool_call_id: z.string(),
    idempotency_key: z.string(),
    phase: z.enum(["prepared", "committing", "committed", "failed", "abandoned", "outcome_unknown"]),
    run_id: z.string(),
    input: z.string(),
    preview: z.unknown(),
    result: z.unknown(),
    error: z.string().nullable(),
    commit_attempts: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
    reduced_at: z.string().nullable().openapi({ description: "Set once the row outlived its retention: the key is then its sha256, and input, preview, result and error are gone." }),
    result_kind: z.string().nullable().openapi({ description: "A reduced committed operation's result type, in place of the result." }),
  })
  .openapi("Operation");

export const DecisionBody = z.strictObject({ reason: z.string().min(1).max(200).optional() }).openapi("DecisionRequest");

export const ConfirmOperationBody = z
  .strictObject({
    outcome: z.enum(["committed", "not_committed"]),
    result: z.unknown().optional(),
  })
  .openapi("ConfirmOperationRequest");

export const OperationParams = z.object({ thread_id: pathId("thr"), op_id: pathId("op") });

export const HistoryMarkerSchema = z
  .object({
    type: z.enum(["interrupted_response", "fragment", "operation_unconfirmed"]),
    label: z.string(),
  })
  .catchall(z.unknown())
  .openapi("HistoryMarker");
