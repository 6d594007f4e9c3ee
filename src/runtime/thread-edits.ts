/**
 * The user's edits of a thread's story outside a run: saving what they saw of a stopped answer,
 * deleting a saved fragment, and branching. Each is one transition of the thread, stamped with the
 * runtime's clock; the server only maps the outcome to HTTP.
 */
import { createId, isTerminalStatus, type Clock, type MessageFormat, type RunRecord } from "../core/index.js";
import type { DeleteMessageResult, ForkThreadResult, SaveFragmentResult, Store } from "../store/index.js";
import type { RunEventBuffer } from "../stream/index.js";

/** What the edits need. */
export interface ThreadEditsContext {
  store: Store;
  clock: Clock;
  /** The run's event stream from `afterSeq`, or undefined when it is gone. */
  openEvents(tenantId: string, run: RunRecord, afterSeq: number): Promise<RunEventBuffer | undefined>;
}

/** Saving a fragment: the store's answer, or why the runtime did not ask it. */
export type SaveFragmentOutcome =
  | SaveFragmentResult
  /** The stream that says what the client saw is gone. */
  | { kind: "stream_expired"; run: RunRecord }
  /** The stream holds no text of this message at or before `last_seq`. */
  | { kind: "fragment_out_of_range"; firstSeq: number; lastSeq: number };

/** A fragment request: the message the client saw part of, and the last event it received. */
export interface SaveFragmentRequest {
  tenantId: string;
  runId: string;
  messageId: string;
  lastSeq: number;
}

/** Saves the text of a stopped answer the client had received at `lastSeq`, as a `fragment`. */
export async function saveFragment(context: ThreadEditsContext, request: SaveFragmentRequest): Promise<SaveFragmentOutcome> {
  const { store, clock } = context;
  const { tenantId, messageId, lastSeq } = request;
  const run = await store.getRun(tenantId, request.runId);
  if (!run) return { kind: "run_not_found" };
  // Only a final stream says what the client can have seen; the store checks again in its transaction.
  if (!isTerminalStatus(run.status)) return { kind: "run_not_terminal", run };
  const buffer = await context.openEvents(tenantId, run, lastSeq);
  if (!buffer) return { kind: "stream_expired", run };
  const received = receivedMessage(buffer, messageId, lastSeq);
  if (received === undefined) return { kind: "fragment_out_of_range", firstSeq: buffer.firstSeq, lastSeq: buffer.lastSeq };
  // A stopped structured step's object: saved as what the user saw, labelled never usable for execution.
  return store.saveFragment({ tenantId, runId: run.runId, messageId, checkpointId: createId("cp"), content: received.text, format: received.format, now: clock.now() });
}

/** Deletes a saved fragment (a new version of the thread; the row stays, marked `deleted`). */
export function deleteMessage(context: ThreadEditsContext, tenantId: string, threadId: string, messageId: string): Promise<DeleteMessageResult> {
  return context.store.deleteMessage({ tenantId, threadId, messageId, checkpointId: createId("cp"), now: context.clock.now() });
}

/** A branch request: the thread and checkpoint to start from, and the branch's metadata. */
export interface ForkRequest {
  tenantId: string;
  sourceThreadId: string;
  fromCheckpointId: string;
  metadata: Record<string, unknown>;
}

/** Starts a branch from a checkpoint of the thread's lineage; it shares the history up to there. */
export function forkThread(context: ThreadEditsContext, request: ForkRequest): Promise<ForkThreadResult> {
  return context.store.forkThread({ ...request, threadId: createId("thr"), checkpointId: createId("cp"), now: context.clock.now() });
}

/**
 * The text of `messageId` the client had received at `lastSeq` (its deltas with seq ≤ lastSeq,
 * joined), and whether they were a structured step's object (`format: "json"`). Undefined when the
 * buffer does not hold `lastSeq` or no delta of the message precedes it.
 */
export function receivedMessage(buffer: RunEventBuffer, messageId: string, lastSeq: number): { text: string; format: MessageFormat } | undefined {
  if (lastSeq < buffer.firstSeq || lastSeq > buffer.lastSeq) return undefined;
  let text: string | undefined;
  let format: MessageFormat = "text";
  for (const event of buffer.eventsBetween(buffer.firstSeq - 1, lastSeq)) {
    if (event.type === "message.delta" && event.message_id === messageId) {
      text = (text ?? "") + event.text;
      if (event.format === "json") format = "json";
    }
  }
  return text === undefined ? undefined : { text, format };
}
