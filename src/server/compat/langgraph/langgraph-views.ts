/** Tidemark's records → the Agent Server's JSON shapes (`Thread`, `ThreadState`, `Run`, `Assistant`). */
import type { AgentDescription } from "../../../agents/index.js";
import type { CheckpointRecord, MessageRecord, RunRecord, RunStatus, ThreadRecord } from "../../../core/index.js";
import { visibleMessages } from "./langgraph-messages.js";

const iso = (ms: number): string => new Date(ms).toISOString();

/** The Agent Server's run statuses. */
export type LangGraphRunStatus = "pending" | "running" | "error" | "success" | "timeout" | "interrupted";

/**
 * A run's status as the Agent Server names it. A Stop ends a run `interrupted` (its cancelled
 * state); a run paused for an approval is `interrupted` too, as a LangGraph interrupt is.
 */
export function langGraphRunStatus(run: RunRecord): LangGraphRunStatus {
  const status: RunStatus = run.status;
  switch (status) {
    case "queued":
      return "pending";
    case "running":
    case "cancel_requested":
    case "cancelling":
      return "running";
    case "interrupted":
    case "cancelled":
      return "interrupted";
    case "completed":
      return "success";
    case "failed":
      return run.failureReason === "timeout" ? "timeout" : "error";
  }
}

/** A run as the Agent Server's `Run`; `assistant_id` is the agent's name. */
export function langGraphRun(run: RunRecord, multitaskStrategy: string | null = null) {
  return {
    run_id: run.runId,
    thread_id: run.threadId,
    assistant_id: run.agent,
    created_at: iso(run.createdAt),
    updated_at: iso(run.endedAt ?? run.startedAt ?? run.createdAt),
    status: langGraphRunStatus(run),
    metadata: { tidemark_status: run.status, state_version: run.stateVersion },
    multitask_strategy: multitaskStrategy,
    kwargs: {},
  };
}

/** The thread's values: its visible messages (at a version, for history: `deletedAt` from {@link deletionVersions}). */
export function threadValues(messages: readonly MessageRecord[], upToStateVersion?: number, deletedAt?: ReadonlyMap<string, number>) {
  return { messages: visibleMessages(messages, upToStateVersion, deletedAt) };
}

/** The version at which each deleted fragment or rolled-back input left the visible result, by message id. */
export function deletionVersions(checkpoints: readonly CheckpointRecord[]): Map<string, number> {
  const versions = new Map<string, number>();
  for (const checkpoint of checkpoints) {
    if ((checkpoint.kind === "message_deleted" || checkpoint.kind === "run_rolled_back") && checkpoint.messageId !== null) {
      versions.set(checkpoint.messageId, checkpoint.stateVersion);
    }
  }
  return versions;
}

/** A thread as the Agent Server's `Thread`, with its current values. */
export function langGraphThread(thread: ThreadRecord, messages: readonly MessageRecord[], activeRun: RunRecord | undefined) {
  return {
    thread_id: thread.threadId,
    created_at: iso(thread.createdAt),
    updated_at: iso(thread.updatedAt),
    state_updated_at: iso(thread.updatedAt),
    metadata: thread.metadata,
    status: activeRun === undefined ? "idle" : activeRun.status === "interrupted" ? "interrupted" : "busy",
    values: threadValues(messages),
    interrupts: {},
  };
}

function checkpointRef(threadId: string, checkpointId: string | null) {
  return { thread_id: threadId, checkpoint_ns: "", checkpoint_id: checkpointId, checkpoint_map: null };
}

/** The thread's state at `checkpoint` (its values are the messages visible at its version). */
export function langGraphState(threadId: string, checkpoint: CheckpointRecord, messages: readonly MessageRecord[], deletedAt?: ReadonlyMap<string, number>) {
  return {
    values: threadValues(messages, checkpoint.stateVersion, deletedAt),
    next: [],
    tasks: [],
    checkpoint: checkpointRef(threadId, checkpoint.checkpointId),
    parent_checkpoint: checkpoint.parentCheckpointId === null ? null : checkpointRef(threadId, checkpoint.parentCheckpointId),
    metadata: { source: "loop", step: checkpoint.stateVersion, kind: checkpoint.kind, run_id: checkpoint.runId, state_version: checkpoint.stateVersion },
    created_at: iso(checkpoint.createdAt),
    interrupts: [],
  };
}

/** A deployed agent as the Agent Server's `Assistant`: its id, graph and name are the agent's name. */
export function langGraphAssistant(agent: AgentDescription, deployedAt: number) {
  return {
    assistant_id: agent.name,
    graph_id: agent.name,
    name: agent.name,
    description: agent.description,
    config: {},
    context: {},
    metadata: { config_schema: agent.configSchema },
    version: 1,
    created_at: iso(deployedAt),
    updated_at: iso(deployedAt),
  };
}
