/** Edits to a thread's messages after its runs: saved fragments and their deletion. */
import { isTerminalStatus, type MessageRecord } from "../../core/index.js";
import type { DeleteMessageInput, DeleteMessageResult, SaveFragmentInput, SaveFragmentResult } from "../store.js";
import { StoreInvariantError } from "../store-invariant-error.js";
import { messageInLineage, readLineage } from "./lineage.js";
import type { SqlContext } from "./sql-context.js";

/** Saves a terminal run's partial output as a fragment message. */
export async function saveFragment(context: SqlContext, input: SaveFragmentInput): Promise<SaveFragmentResult> {
  return context.transaction(async (tx): Promise<SaveFragmentResult> => {
    const run = await tx.run(input.tenantId, input.runId);
    if (!run) return { kind: "run_not_found" };
    if (!isTerminalStatus(run.status)) return { kind: "run_not_terminal", run };
    const existing = await tx.message(input.tenantId, input.messageId);
    if (existing) return { kind: "exists", message: existing };
    const read = await tx.threadWithPosition(input.tenantId, run.threadId);
    if (!read || read.thread.status !== "active") return { kind: "thread_not_found" };
    const { thread, nextPosition: position } = read;
    if (thread.activeRunId !== null) return { kind: "run_in_progress", thread };
    // The fragment is appended: it belongs right after its run's own messages, nowhere else.
    const newest = await tx.sql(
      "SELECT run_id FROM messages WHERE tenant_id = ? AND thread_id = ? ORDER BY position DESC LIMIT 1",
    ).get(input.tenantId, run.threadId);
    if (newest?.run_id !== run.runId) return { kind: "thread_moved_on", thread };
    const advanced = await tx.advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "fragment_saved",
        runId: run.runId,
        messageId: input.messageId,
        createdAt: input.now,
      },
      { positions: 1 },
    );
    const message: MessageRecord = {
      tenantId: input.tenantId,
      messageId: input.messageId,
      threadId: run.threadId,
      position,
      role: "assistant",
      content: input.content,
      runId: run.runId,
      stateVersion: advanced.thread.stateVersion,
      checkpointId: input.checkpointId,
      publicationStatus: "fragment",
      toolCalls: null,
      toolCallId: null,
      toolName: null,
      label: null,
      interrupted: false,
      format: input.format ?? "text",
      createdAt: input.now,
    };
    await tx.insertMessage(message);
    return { kind: "saved", message, checkpoint: advanced.checkpoint, thread: advanced.thread };
  });
}

/** Deletes a fragment from a thread's lineage with a `message_deleted` checkpoint. */
export async function deleteMessage(context: SqlContext, input: DeleteMessageInput): Promise<DeleteMessageResult> {
  return context.transaction(async (tx): Promise<DeleteMessageResult> => {
    const thread = await tx.thread(input.tenantId, input.threadId);
    if (!thread || thread.status !== "active") return { kind: "thread_not_found" };
    const stored = await tx.message(input.tenantId, input.messageId);
    const levels = (await readLineage(tx.sql, input.tenantId, input.threadId))!;
    // A branch may delete a fragment it shares: the checkpoint records it for this lineage only.
    const message = stored ? await messageInLineage(tx, input.tenantId, levels, stored) : undefined;
    if (!message || message.publicationStatus === "deleted") return { kind: "message_not_found" };
    if (message.publicationStatus !== "fragment") return { kind: "not_deletable", message };
    const isInherited = message.threadId !== input.threadId;
    const advanced = await tx.advanceThread(
      thread,
      {
        checkpointId: input.checkpointId,
        kind: "message_deleted",
        messageId: message.messageId,
        createdAt: input.now,
      },
      {},
    );
    if (isInherited) return { kind: "deleted", message: { ...message, publicationStatus: "deleted" }, checkpoint: advanced.checkpoint, thread: advanced.thread };
    // Append-only: the row keeps the version and checkpoint that saved it; the new checkpoint records the delete.
    const result = await tx.sql(
      `UPDATE messages SET publication_status = 'deleted'
       WHERE tenant_id = ? AND message_id = ? AND publication_status = 'fragment'`,
    ).run(input.tenantId, input.messageId);
    if (result.changes !== 1) throw new StoreInvariantError("compare_and_set_failed", input.messageId, `message status compare-and-set failed for ${input.messageId}`);
    return {
      kind: "deleted",
      message: { ...message, publicationStatus: "deleted" },
      checkpoint: advanced.checkpoint,
      thread: advanced.thread,
    };
  });
}
