import {
  createId,
  hashJson,
  isTerminalStatus,
  TidemarkError,
  type Clock,
  type RecoveryPolicy,
  type RunInput,
  type RunRecord,
  type ThreadRecord,
} from "../core/index.js";
import type { Store } from "../store/index.js";
import type { EventHub } from "../stream/index.js";
import type { CancelRunResult } from "./cancel-run.js";
import type { DisconnectWatch } from "./disconnect-watch.js";
import type { ChatModel } from "../core/model.js";
import type { PendingCancels } from "./pending-cancels.js";
import { conflictDetails } from "./run-errors.js";
import type { AgentRegistry } from "../agents/agent-registry.js";
import { rollBackRun } from "./roll-back-run.js";
import { readStoppedAt } from "./run-agent.js";
import type { RunLimits } from "./run-limits.js";
import type { TraceCarrier } from "./tracing.js";

/** A request to start a run. */
export interface StartRunRequest {
  tenantId: string;
  threadId: string;
  /** The user's new message; omit it only with `resumeFromCheckpointId` (continue: the stopped step runs again). */
  input?: RunInput;
  runId?: string;
  idempotencyKey?: string;
  expectedStateVersion?: number;
  onDisconnect?: "continue" | "cancel";
  recoveryPolicy?: RecoveryPolicy;
  /**
   * On a busy thread: `reject` (default), `interrupt` (cancel the active run, wait until it is
   * terminal, then start), `rollback` (as `interrupt`, and take the stopped run's input back
   * first, see roll-back-run.ts) or `enqueue` (start when the runs before it have ended, in order).
   */
  multitask?: "reject" | "interrupt" | "rollback" | "enqueue";
  /** Continue from this checkpoint; it must be the thread's head. */
  resumeFromCheckpointId?: string;
  /**
   * Create the thread (id `threadId`) with the run, in one transaction: see {@link startRunInNewThread}.
   * Its title, when given, is never replaced by the automatic one.
   */
  newThread?: NewThreadOptions;
  /** The agent to run (default `chat`; a Continue without one keeps the stopped run's agent). */
  agent?: string;
  /** The agent's config, validated by its schema (a Continue without one keeps the stopped run's). */
  config?: unknown;
  /**
   * A system instruction for this run only: each of its model requests starts with it (after
   * the agent's own context is built), and it is never published to the thread.
   */
  instructions?: string;
  /** The client's notes about the run, stored with it and returned as given; the runtime never reads them. */
  metadata?: Record<string, unknown>;
  /**
   * The caller's W3C trace context (`traceparent`, `tracestate` headers): the run's span becomes a
   * child of it when the run executes in this process as it is created (not yet for a run that
   * waits behind another or is taken by another process: the context is not stored with the run).
   */
  traceContext?: TraceCarrier;
}

/** A thread created with its first run. */
export interface NewThreadOptions {
  title?: string;
  metadata?: Record<string, unknown>;
}

/** A request to start a run in a new thread: what builds on an earlier state has no place in it. */
export type NewThreadRunRequest = Omit<StartRunRequest, "threadId" | "newThread" | "expectedStateVersion" | "resumeFromCheckpointId" | "multitask">;

/** What starting a run needs from the runtime. */
export interface StartRunContext {
  store: Store;
  model: ChatModel;
  agents: AgentRegistry;
  clock: Clock;
  hub: EventHub;
  /** The policy of a run that names none. */
  recoveryPolicy: RecoveryPolicy;
  limits: Pick<RunLimits, "maxActiveRunsPerTenant" | "maxQueuedRunsPerTenant" | "maxInputChars">;
  pendingCancels: PendingCancels;
  disconnectWatch: DisconnectWatch;
  isClosed(): boolean;
  trace(run: RunRecord, kind: string, data: Record<string, unknown>): void;
  saveTitle(thread: ThreadRecord, firstMessage: string): void;
  /** Claims a queued run for this process and executes it in the background. */
  launch(run: RunRecord, traceContext?: TraceCarrier): void;
  cancelRun(tenantId: string, runId: string, reason: string): Promise<CancelRunResult>;
  waitForTerminal(tenantId: string, runId: string, timeoutMs: number): Promise<RunRecord | undefined>;
  confirmUnknownOperations(tenantId: string, threadId: string): Promise<void>;
}

/** Starts a run (or returns the earlier one for a repeated run_id / Idempotency-Key). */
export async function startRun(context: StartRunContext, request: StartRunRequest): Promise<{ run: RunRecord; isNew: boolean }> {
  if (context.isClosed()) throw new TidemarkError("shutting_down", "The server is shutting down.");
  if (request.input === undefined && request.resumeFromCheckpointId === undefined) {
    throw new TidemarkError("invalid_request", "input is required, unless the run continues from resume_from_checkpoint_id.");
  }
  const maxInputChars = context.limits.maxInputChars;
  if (request.input !== undefined && request.input.content.length > maxInputChars) {
    throw new TidemarkError("input_too_long", `The input message is longer than ${maxInputChars} characters.`, { details: { limit: maxInputChars } });
  }
  if (request.newThread && (request.resumeFromCheckpointId !== undefined || request.expectedStateVersion !== undefined)) {
    throw new TidemarkError("invalid_request", "A run in a new thread builds on nothing earlier: it takes no resume point or expected version.");
  }
  const program = await resolveAgent(context, request);
  // A new thread has no operations yet, confirmed or not.
  if (!request.newThread) await context.confirmUnknownOperations(request.tenantId, request.threadId);
  // The request as the client sent it names the run: a retry below must hash the same. A new
  // thread's id is the server's, so it is not part of the request; what the client said of it is.
  const requestHash = hashJson({
    thread_id: request.newThread ? null : request.threadId,
    ...(request.newThread ? { new_thread: { title: request.newThread.title ?? null, metadata: request.newThread.metadata ?? {} } } : {}),
    input: request.input ?? null,
    resume: request.resumeFromCheckpointId ?? null,
    // Absent for the default, so a run created before agents existed hashes as it did.
    ...(request.agent !== undefined || request.config !== undefined ? { agent: request.agent ?? null, config: request.config ?? null } : {}),
    // Likewise absent when not given: a repeat with other instructions or metadata is another request.
    ...(request.instructions !== undefined ? { instructions: request.instructions } : {}),
    ...(request.metadata !== undefined ? { metadata: request.metadata } : {}),
  });
  let attempt = request;
  for (let interrupts = 0; ; interrupts++) {
    try {
      return await createRun(context, attempt, requestHash, program);
    } catch (error) {
      const isBusy = TidemarkError.isInstance(error) && error.code === "run_in_progress";
      const isInterrupting = request.multitask === "interrupt" || request.multitask === "rollback";
      if (!isInterrupting || !isBusy || interrupts >= MAX_INTERRUPTS) throw error;
      // interrupt: cancel the active run, wait until it has really stopped, then start on what it
      // left. Another interrupting create may have started its run meanwhile: interrupt that one too.
      const activeRunId = error.details.active_run_id as string;
      const cancelled = await context.cancelRun(request.tenantId, activeRunId, "interrupted_by_new_run");
      const ended = await context.waitForTerminal(request.tenantId, activeRunId, 30_000);
      if (!ended || !isTerminalStatus(ended.status)) throw error;
      // What the client built on was current before the interrupt (the store checked it); the
      // cancel it asked for moved the thread by one, so the retry builds on that version.
      let builtOn = cancelled.kind === "accepted" ? cancelled.acceptedStateVersion : undefined;
      if (request.multitask === "rollback") {
        // The stopped run's turn is taken back before the new one starts (one more version).
        const rolledBack = await rollBackRun(context, { tenantId: request.tenantId, runId: activeRunId, reason: "interrupted_by_new_run", waitMs: 0 });
        builtOn = builtOn === undefined ? undefined : rolledBack.thread.stateVersion;
      }
      const isVersioned = attempt.expectedStateVersion !== undefined || attempt.resumeFromCheckpointId !== undefined;
      attempt = { ...attempt, resumeFromCheckpointId: undefined, expectedStateVersion: isVersioned ? (builtOn ?? attempt.expectedStateVersion) : undefined };
    }
  }
}

/** How many active runs one interrupting create cancels before it gives up (others keep starting runs). */
const MAX_INTERRUPTS = 5;

async function createRun(
  context: StartRunContext,
  request: StartRunRequest,
  requestHash: string,
  program: RunProgram,
): Promise<{ run: RunRecord; isNew: boolean }> {
  const { store, clock, hub } = context;
  const runId = request.runId ?? createId("run");
  const result = await store.createRun({
    tenantId: request.tenantId,
    runId,
    threadId: request.threadId,
    ...(request.newThread ? { newThread: { checkpointId: createId("cp"), metadata: request.newThread.metadata ?? {}, title: request.newThread.title ?? null } } : {}),
    input: request.input ?? null,
    inputMessageId: createId("msg"),
    checkpointId: createId("cp"),
    idempotencyKey: request.idempotencyKey ?? null,
    requestHash,
    model: context.model.id,
    agent: program.agent,
    config: program.config,
    instructions: program.instructions,
    ...(request.metadata !== undefined ? { metadata: request.metadata } : {}),
    onDisconnect: request.onDisconnect ?? "continue",
    recoveryPolicy: request.recoveryPolicy ?? context.recoveryPolicy,
    expectedStateVersion: request.expectedStateVersion ?? null,
    resumeFromCheckpointId: request.resumeFromCheckpointId ?? null,
    enqueue: request.multitask === "enqueue",
    tenantRunLimits: { maxActiveRuns: context.limits.maxActiveRunsPerTenant, maxQueuedRuns: context.limits.maxQueuedRunsPerTenant },
    now: clock.now(),
  });
  switch (result.kind) {
    case "enqueued": {
      context.trace(result.run, "run_enqueued", { idempotency_key: result.run.idempotencyKey, behind: result.thread.activeRunId });
      hub.ensure(result.run.tenantId, result.run.runId, result.run.attempt);
      // A Stop pressed before this create arrived ends the waiting run before it is ever admitted.
      const cancelled = await applyPendingCancel(context, result.run);
      return { run: cancelled ?? result.run, isNew: true };
    }
    case "existing":
      return { run: result.run, isNew: false };
    case "key_reused":
      throw new TidemarkError("idempotency_key_reused", "This run id or Idempotency-Key was used for a different request.", {
        details: { run_id: result.run.runId },
      });
    case "thread_not_found":
      throw new TidemarkError("thread_not_found", "No such thread.");
    case "checkpoint_not_found":
      throw new TidemarkError("checkpoint_not_found", "No such checkpoint in this thread's lineage.");
    case "state_version_conflict":
      // Reload, or branch from the point the client built on (not the head: that holds the other tab's story).
      throw new TidemarkError("state_version_conflict", "The thread has moved on since the version you built on.", {
        details: {
          ...conflictDetails(result.thread),
          allowed_actions: ["reload", `fork_from_${result.builtOnCheckpointId ?? result.thread.headCheckpointId}`],
        },
      });
    case "run_in_progress":
      throw new TidemarkError("run_in_progress", "The thread already has an active run.", {
        details: { active_run_id: result.thread.activeRunId, current_state_version: result.thread.stateVersion },
      });
    case "too_many_runs":
      throw new TidemarkError("too_many_runs", `This tenant already has ${result.limit} ${result.queue} runs; try again once some have ended.`, {
        details: { queue: result.queue, limit: result.limit, retry_after_s: 1 },
      });
    case "operation_unconfirmed":
      throw new TidemarkError("operation_unconfirmed", "An earlier action's outcome is unknown; confirm it before starting another run.", {
        // The server adds the links; the runtime knows no URL.
        details: { thread_id: request.threadId, operations: result.operations.map((operation) => operation.opId) },
      });
    case "created":
      break;
  }
  const { run, thread } = result;
  context.trace(run, "run_created", { idempotency_key: run.idempotencyKey, request_hash: requestHash, base_checkpoint_id: run.baseCheckpointId });
  if (thread.title === null && request.input) context.saveTitle(thread, request.input.content);
  const cancelled = await applyPendingCancel(context, run);
  if (cancelled) return { run: cancelled, isNew: true };
  if (run.onDisconnect === "cancel") context.disconnectWatch.watch(run.tenantId, run.runId);
  // The buffer exists before the reply, so a client that subscribes at once waits for events.
  hub.ensure(run.tenantId, run.runId, run.attempt);
  context.launch(run, request.traceContext);
  return { run, isNew: true };
}

/**
 * Starts a run in a thread created with it (one transaction: neither exists without the other),
 * as `POST /v1/runs` does. A repeat (same run id or Idempotency-Key, same request) returns the
 * first run, in the thread made for it, and creates nothing.
 */
export function startRunInNewThread(context: StartRunContext, request: NewThreadRunRequest, thread: NewThreadOptions = {}): Promise<{ run: RunRecord; isNew: boolean }> {
  return startRun(context, { ...request, threadId: createId("thr"), newThread: thread });
}

/** Applies a cancel that was pressed before the run existed (DESIGN §8); the run as it then stands, or undefined if there was none. */
async function applyPendingCancel(context: StartRunContext, run: RunRecord): Promise<RunRecord | undefined> {
  const reason = context.pendingCancels.take(run.tenantId, run.runId, context.clock.now());
  if (reason === undefined) return undefined;
  await context.cancelRun(run.tenantId, run.runId, reason);
  return (await context.store.getRun(run.tenantId, run.runId))!;
}

/** The agent a run executes, its validated config (JSON text, defaults filled in) and its own instructions. */
interface RunProgram {
  agent: string;
  config: string | null;
  instructions: string | null;
}

/**
 * The run's agent, config and instructions: as named, else (a Continue) the stopped run's, else
 * `chat`, none and none. An unknown agent is `agent_not_found`; a config its schema refuses is
 * `invalid_config`.
 */
async function resolveAgent(context: StartRunContext, request: StartRunRequest): Promise<RunProgram> {
  const isInherited = request.agent === undefined || request.config === undefined || request.instructions === undefined;
  const stopped = request.input === undefined && isInherited ? await stoppedRun(context, request) : undefined;
  // The stopped step runs again with the context it had, its run's own instructions included.
  const instructions = request.instructions ?? stopped?.instructions ?? null;
  const name = request.agent ?? stopped?.agent ?? "chat";
  const agent = context.agents.get(name);
  if (!agent) throw new TidemarkError("agent_not_found", `No agent named "${name}" is deployed.`, { details: { agent: name } });
  if (request.agent === undefined && request.config === undefined && stopped?.agent === name) return { agent: name, config: stopped.config, instructions };
  const parsed = context.agents.parseConfig(agent, request.config);
  if (!parsed.ok) throw new TidemarkError("invalid_config", `The config does not match the "${name}" agent's schema.`, { details: { agent: name, issues: parsed.issues } });
  return { agent: name, config: isEmptyConfig(parsed.config) ? null : JSON.stringify(parsed.config), instructions };
}

/** The run whose Stop a Continue builds on, if its checkpoint names one. */
async function stoppedRun(context: StartRunContext, request: StartRunRequest): Promise<RunRecord | undefined> {
  if (request.resumeFromCheckpointId === undefined) return undefined;
  const thread = await context.store.getThread(request.tenantId, request.threadId);
  if (!thread) return undefined;
  const stopped = await readStoppedAt(context.store, request.tenantId, request.threadId, request.resumeFromCheckpointId, thread.stateVersion);
  return stopped?.runId ? context.store.getRun(request.tenantId, stopped.runId) : undefined;
}

function isEmptyConfig(config: unknown): boolean {
  return typeof config === "object" && config !== null && Object.keys(config).length === 0;
}
