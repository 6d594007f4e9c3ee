/**
 * `tidemark/client`: a browser-safe client for Tidemark. Three layers, use the one you need:
 * the typed API client, a resilient run event stream, and a chat session that keeps published
 * history apart from the streaming draft and offers only the actions the server can carry out.
 *
 * @example
 * import { createChatSession, createTidemarkClient } from "tidemark/client";
 * const session = createChatSession({ client: createTidemarkClient({ baseUrl: "http://127.0.0.1:8787" }) });
 * session.subscribe((snapshot) => console.log(snapshot.history, snapshot.draft?.text));
 * await session.send("Hello");
 */
export { createTidemarkClient, type TidemarkClient, type TidemarkClientOptions } from "./api-client.js";
export { TidemarkApiError } from "./tidemark-api-error.js";
export { CLIENT_ERROR_CODES, TidemarkClientError, type TidemarkClientErrorCode } from "./tidemark-client-error.js";
export type {
  AgentListView,
  AgentView,
  CancelView,
  CheckpointView,
  DeletedMessageView,
  ErrorBody,
  HistoryMarker,
  HistoryView,
  MessageView,
  OperationView,
  RunStepsView,
  RunView,
  StartRunBody,
  StatsView,
  StepStatusView,
  StepView,
  ThreadPage,
  ThreadView,
} from "./wire-types.js";
export { openRunEventStream, type RunEventStream, type RunEventStreamOptions, type StreamNotice } from "./event-stream.js";
export {
  canConnectionTransition,
  connectionFlags,
  CONNECTION_STATES,
  type ConnectionFailure,
  type ConnectionFlags,
  type ConnectionState,
  type ConnectionStatus,
} from "./connection-state.js";
export {
  canRunTransition,
  IDLE_RUN,
  isTerminalRunPhase,
  reduceRun,
  runFlags,
  type PendingApproval,
  type RunAction,
  type RunFlags,
  type RunPhase,
  type RunState,
} from "./run-state.js";
export { createChatSession, type ChatSession, type ChatSessionOptions } from "./chat-session.js";
export type { AgentChoice, AttemptedAction, ChatActions, ChatConflict, ChatDraft, ChatSnapshot } from "./session-state.js";
export { isPlanRun } from "./session-state.js";
export {
  applyPlanEvent,
  applyRunSteps,
  emptyPlan,
  isTerminalStepStatus,
  mergeStep,
  planForRun,
  type PlanState,
  type PlanStep,
} from "./plan-state.js";
export type { ResumePoint } from "./resume-point.js";
export { isStopPending, type StopOutcome, type StopState, type StopStatus } from "./stop-state.js";
export { createRunId } from "./create-run-id.js";
export {
  createTidemarkTransport,
  type TidemarkChatTransport,
  type TidemarkRunInfo,
  type TidemarkStopOutcome,
  type TidemarkTransportOptions,
  type TidemarkTransportSettings,
} from "./ai-sdk-transport.js";
export type { RunEvent, RunEventType } from "../core/run-event.js";
