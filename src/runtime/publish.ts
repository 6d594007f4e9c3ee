import { createId, statsView } from "../core/index.js";
import type { PublishMessageInput, PublishMessageResult } from "../store/index.js";
import { PublicationRejectedError } from "./publication-rejected-error.js";
import type { RunExecution } from "./run-execution.js";

export { PublicationRejectedError } from "./publication-rejected-error.js";

/** What a step asks to publish. */
export type PublishRequest = Omit<PublishMessageInput, "tenantId" | "runId" | "checkpointId" | "now">;

/**
 * Publishes a message with its checkpoint and emits what it changed, or throws if a cancel (or
 * any terminal write) committed first: sticky terminal status, decided by the store.
 */
export async function publish(execution: RunExecution, request: PublishRequest): Promise<Extract<PublishMessageResult, { kind: "published" }>> {
  // A live turn's answer enters history only once the user heard it all (an interruption
  // aborts this wait, and its cancel publishes the heard part instead).
  if (execution.liveOutput && request.role === "assistant" && request.content) {
    await execution.liveOutput.heardWhole(request.messageId, request.content, execution.scope.signal);
  }
  // A cancel accepted while this write is under way waits for its events (`announceCancel`): the
  // write may have committed first, its answer still on the way (seen on PostgreSQL).
  const publishing = (execution.publishing ??= new Set());
  const writing = writeAndEmit(execution, request);
  const settled: Promise<void> = writing.then(
    () => void publishing.delete(settled),
    () => void publishing.delete(settled),
  );
  publishing.add(settled);
  return writing;
}

async function writeAndEmit(execution: RunExecution, request: PublishRequest): Promise<Extract<PublishMessageResult, { kind: "published" }>> {
  const { run } = execution;
  const published = await execution.store.publishMessage({
    ...request,
    tenantId: run.tenantId,
    runId: run.runId,
    checkpointId: createId("cp"),
    attempt: run.attempt,
    now: execution.clock.now(),
  });
  if (published.kind === "rejected") {
    // The late output goes to traces only.
    execution.trace("late_output_discarded", { message_id: request.messageId, chars: request.content.length, step_id: request.completedStepId });
    throw new PublicationRejectedError(run.runId);
  }
  execution.emit({
    type: "message.published",
    run_id: run.runId,
    message_id: request.messageId,
    state_version: published.thread.stateVersion,
    checkpoint_id: published.checkpoint.checkpointId,
    role: request.role,
  });
  execution.emit({
    type: "checkpoint.saved",
    run_id: run.runId,
    checkpoint_id: published.checkpoint.checkpointId,
    state_version: published.checkpoint.stateVersion,
    kind: published.checkpoint.kind,
  });
  execution.emit({ type: "stats.updated", run_id: run.runId, thread_stats: statsView(published.thread.stats), run_stats: statsView(published.run.stats) });
  return published;
}
