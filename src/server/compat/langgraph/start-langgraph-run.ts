import type { RunRecord } from "../../../core/index.js";
import type { Runtime, TraceCarrier } from "../../../runtime/index.js";
import { approvalOf, resumePausedRun, type ResumeDecision } from "../resume-paused-run.js";
import { LangGraphError } from "./langgraph-error.js";
import { runInputOf } from "./langgraph-messages.js";
import type { RunCreateBody } from "./langgraph-schemas.js";

/** A started run; `isResume` when a `command` made the thread's paused run go on (its stream starts after the pause). */
export interface StartedLangGraphRun {
  run: RunRecord;
  isResume: boolean;
}

/**
 * Starts a Tidemark run from an Agent Server create request: `assistant_id` names the agent,
 * `input.messages` holds the one new user message (none: Continue a stopped run), `context` is
 * the agent's config, `checkpoint_id` must be the thread's head (it becomes the expected version).
 * `command: {resume}` instead answers the thread's run paused before a consequential tool.
 */
export async function startLangGraphRun(
  runtime: Runtime,
  tenantId: string,
  threadId: string,
  body: RunCreateBody,
  traceContext?: TraceCarrier,
): Promise<StartedLangGraphRun> {
  if (body.command !== undefined && body.command !== null) return { run: await resumeLangGraphRun(runtime, tenantId, threadId, body), isResume: true };
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
    traceContext,
  });
  return { run, isResume: false };
}

/**
 * `Command({resume})`: `true` or `{approved: true}` approves the operation the thread's run is
 * paused before, `false` or `{approved: false}` rejects it; the same native run goes on.
 */
async function resumeLangGraphRun(runtime: Runtime, tenantId: string, threadId: string, body: RunCreateBody): Promise<RunRecord> {
  const command = body.command as Record<string, unknown>;
  const isObject = typeof command === "object" && !Array.isArray(command);
  const others = isObject ? Object.keys(command).filter((key) => key !== "resume" && command[key] !== null && command[key] !== undefined) : [];
  if (!isObject || !("resume" in command) || others.length > 0) {
    throw new LangGraphError(422, "invalid_request", "command must be {resume: true | false | {approved: boolean}}: goto and update are not supported.");
  }
  if (body.input !== undefined && body.input !== null) throw new LangGraphError(422, "invalid_request", "Send either input or command, not both.");
  const approval = approvalOf(command.resume);
  if (approval === undefined) throw new LangGraphError(422, "invalid_request", "command.resume must be true, false, or {approved: true | false}.");
  const thread = await runtime.store.getThread(tenantId, threadId);
  if (!thread) throw new LangGraphError(404, "thread_not_found", "No such thread.");
  const decision: ResumeDecision = approval ? "approved" : "rejected";
  return resumePausedRun(runtime, tenantId, thread, () => decision);
}
