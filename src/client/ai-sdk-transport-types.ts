/** The AI SDK transport's public shapes, apart from its code so the stream mapping can name them too. */
import type { RunEventStreamOptions } from "./event-stream.js";
import type { CancelView, ThreadView } from "./wire-types.js";

/** Where a run shown by the transport stands (the `tidemark` message metadata). */
export interface TidemarkRunInfo {
  thread_id: string;
  run_id: string;
  status: "running" | "interrupted" | "cancel_requested" | "cancelling" | "completed" | "cancelled" | "failed";
  /** The seq of the last event the chat was given (what a fragment's `last_seq` should be). */
  last_seq: number;
  /** The Tidemark message whose deltas were shown last (a fragment's `message_id`). */
  last_message_id: string | null;
  /** The newest thread version this run reported. */
  state_version: number | null;
  published_message_id: string | null;
  /** After a Stop: the checkpoint a Continue builds on. */
  resume_checkpoint_id: string | null;
  cancel_reason: string | null;
  failure_reason: string | null;
  discarded_stream_chars: number | null;
  /** A consequential operation waiting for `approve`/`reject`. */
  interrupted: { op_id: string; tool: string; idempotency_key: string; preview: unknown } | null;
}

/** The outcome of a Stop's cancel request. */
export interface TidemarkStopOutcome {
  chatId: string;
  threadId: string;
  runId: string;
  /** The server's reply (`status` is the terminal one unless `wait_timed_out`). */
  cancel?: CancelView;
  /** Set when the cancel could not be delivered. */
  error?: unknown;
}

/** Hooks and settings of `createTidemarkTransport`. */
export interface TidemarkTransportSettings {
  /** The thread of a chat the transport has not seen (e.g. after a reload); `undefined`/`null`: none yet. */
  threadIdFor?: (chatId: string) => string | null | undefined | Promise<string | null | undefined>;
  /** Told when the transport created a thread for a chat: persist the mapping here. */
  onThreadCreated?: (event: { chatId: string; threadId: string; thread: ThreadView }) => void | Promise<void>;
  /** The cancel reason a Stop sends (default `user_pressed_stop`). */
  stopReason?: string;
  /** How long a Stop's cancel waits for the run to be really terminal (default 10 000 ms). */
  stopWaitMs?: number;
  /** Told how each Stop's cancel ended (also when it could not be delivered). */
  onStop?: (outcome: TidemarkStopOutcome) => void;
  /** Heartbeat timeout and retry budget of the event streams. */
  stream?: Pick<RunEventStreamOptions, "heartbeatTimeoutMs" | "retry">;
}
