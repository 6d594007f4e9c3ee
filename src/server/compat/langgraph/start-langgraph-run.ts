import type { RunRecord } from "../../../core/index.js";
import type { Runtime } from "../../../runtime/index.js";
import { LangGraphError } from "./langgraph-error.js";
import { runInputOf } from "./langgraph-messages.js";
import type { RunCreateBody } from "./langgraph-schemas.js";

/**
 * Starts a Tidemark run from an Agent Server create request: `assistant_id` names the agent,
 * `input.messages` holds the one new user message (none: Continue a stopped run), `context` is
 * the agent's config, `checkpoint_id` must be the thread's head (it becomes the expected version).
 */
export async function startLangGraphRun(runtime: Runtime, tenantId: string, threadId: string, body: RunCreateBody): Promise<RunRecord> {
  if (body.command !== undefined && body.command !== null) {
    throw new LangGraphError(422, "unsupported", "command is not supported: approve or reject an operation through Tidemark's /v1 API.");
  }
  if (body.multitask_strategy === "rollback") {
    throw new LangGraphError(422, "unsupported", 'multitask_strategy "rollback" is not supported: a Stop keeps the user\'s message; use "interrupt".');
  }
  const hasInput = body.input !== undefined && body.input !== null;
  const input = hasInput ? runInputOf(body.input) : undefined;
  const checkpointId = body.checkpoint_id ?? body.checkpoint?.checkpoint_id ?? undefined;
  let expectedStateVersion: number | undefined;
  let resumeFromCheckpointId: string | undefined;
  if (checkpointId !== undefined || !hasInput) {
    const thread = await runtime.store.getThread(tenantId, threadId);
    if (!thread) throw new LangGraphError(404, "thread_not_found", "No such thread.");
    if (checkpointId !== undefined && checkpointId !== thread.headCheckpointId) {
      throw new LangGraphError(409, "state_version_conflict", "checkpoint_id is not the thread's latest checkpoint: Tidemark runs build on the head only.");
    }
    expectedStateVersion = thread.stateVersion;
    // No input: continue what a Stop left (the stopped step runs again), as Tidemark's Continue.
    if (!hasInput) resumeFromCheckpointId = thread.headCheckpointId;
  }
  const context = body.context;
  const hasConfig = typeof context === "object" && context !== null && Object.keys(context).length > 0;
  const { run } = await runtime.startRun({
    tenantId,
    threadId,
    input,
    agent: body.assistant_id,
    config: hasConfig ? context : undefined,
    onDisconnect: body.on_disconnect ?? undefined,
    multitask: body.multitask_strategy ?? undefined,
    expectedStateVersion: resumeFromCheckpointId === undefined ? expectedStateVersion : undefined,
    resumeFromCheckpointId,
  });
  return run;
}
