import { TidemarkError, type ThreadRecord } from "../../../core/index.js";
import type { Runtime } from "../../../runtime/index.js";
import { isWellFormedId } from "../../path-id.js";

/** The Tidemark thread an AG-UI request runs on, and the idempotency key of its run. */
export interface AgUiThread {
  thread: ThreadRecord;
  /** The native run's idempotency key: a repeated request (same AG-UI run id) returns the same run. */
  runKey: string;
}

/** The key of the first run of AG-UI thread `agUiThreadId`: it is also the thread's durable mapping. */
function threadKey(agUiThreadId: string): string {
  return `ag-ui:thread:${agUiThreadId}`;
}

/** The key of a later run, found again by its AG-UI run id. */
export function agUiRunKey(agUiRunId: string): string {
  return `ag-ui:run:${agUiRunId}`;
}

/**
 * Maps an AG-UI thread id onto a Tidemark thread (decided in docs/compat.md):
 * - a Tidemark thread id (`thr_…`) names that thread (unknown or another tenant's: 404);
 * - any other id names the thread created for it by its first AG-UI run. That run carries the
 *   idempotency key `ag-ui:thread:<id>`, which is the stored, tenant-scoped mapping (no table of
 *   our own); a new id creates the thread (metadata `ag_ui.thread_id`, `ag_ui.first_run_id` and
 *   `ag_ui.agent`: the agent its later runs use when they name none).
 * A deleted thread stays deleted (404); it is not silently recreated.
 */
export async function resolveAgUiThread(
  runtime: Runtime,
  tenantId: string,
  ids: { threadId: string; runId: string; agent: string | undefined },
): Promise<AgUiThread> {
  const { threadId: agUiThreadId, runId: agUiRunId } = ids;
  if (isWellFormedId(agUiThreadId, "thr")) {
    return { thread: await requireThread(runtime, tenantId, agUiThreadId), runKey: agUiRunKey(agUiRunId) };
  }
  const firstRun = await runtime.store.findRunByIdempotencyKey(tenantId, threadKey(agUiThreadId));
  if (!firstRun) {
    const thread = await runtime.createThread(tenantId, { metadata: { ag_ui: { thread_id: agUiThreadId, first_run_id: agUiRunId, ...(ids.agent ? { agent: ids.agent } : {}) } } });
    return { thread, runKey: threadKey(agUiThreadId) };
  }
  const thread = await requireThread(runtime, tenantId, firstRun.threadId);
  const isFirstRun = (thread.metadata.ag_ui as { first_run_id?: unknown } | undefined)?.first_run_id === agUiRunId;
  return { thread, runKey: isFirstRun ? threadKey(agUiThreadId) : agUiRunKey(agUiRunId) };
}

async function requireThread(runtime: Runtime, tenantId: string, threadId: string): Promise<ThreadRecord> {
  const thread = await runtime.store.getThread(tenantId, threadId);
  if (!thread) throw new TidemarkError("thread_not_found", "No such thread.");
  return thread;
}
