/** The request bodies of the LangGraph layer, as `@langchain/langgraph-sdk` sends them (unknown fields are ignored). */
import { z } from "zod";

/** The stream modes a client may ask for; only `values`, `messages-tuple` and `updates` produce events here. */
export const STREAM_MODES = ["values", "messages", "updates", "events", "debug", "tasks", "checkpoints", "custom", "messages-tuple"] as const;

/** One stream mode. */
export type StreamMode = (typeof STREAM_MODES)[number];

const StreamModeField = z.union([z.enum(STREAM_MODES), z.array(z.enum(STREAM_MODES)).max(STREAM_MODES.length)]);

const CheckpointField = z.object({ checkpoint_id: z.string().max(200).nullish() }).nullish();

/** `POST /threads/{t}/runs`, `/runs/stream` and `/runs/wait`. */
export const RunCreateBody = z.object({
  assistant_id: z.string().min(1).max(200),
  input: z.unknown().optional(),
  command: z.unknown().optional(),
  context: z.unknown().optional(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  stream_mode: StreamModeField.nullish(),
  stream_resumable: z.boolean().nullish(),
  multitask_strategy: z.enum(["reject", "interrupt", "rollback", "enqueue"]).nullish(),
  on_disconnect: z.enum(["cancel", "continue"]).nullish(),
  checkpoint: CheckpointField,
  checkpoint_id: z.string().max(200).nullish(),
});

/** A run's create request. */
export type RunCreateBody = z.infer<typeof RunCreateBody>;

/** `POST /threads`. */
export const ThreadCreateBody = z.object({
  metadata: z.record(z.string(), z.unknown()).nullish(),
  thread_id: z.string().max(200).nullish(),
  if_exists: z.enum(["raise", "do_nothing"]).nullish(),
});

/** `POST /threads/{t}/history`. */
export const HistoryBody = z.object({
  limit: z.number().int().min(1).max(1000).nullish(),
  before: z.union([z.string().max(200), z.object({ configurable: CheckpointField }).passthrough()]).nullish(),
});

/** `POST /assistants/search`. */
export const AssistantSearchBody = z.object({
  graph_id: z.string().max(200).nullish(),
  name: z.string().max(200).nullish(),
  limit: z.number().int().min(1).max(1000).nullish(),
  offset: z.number().int().min(0).nullish(),
});
