/**
 * The typed Tidemark API client: one method per endpoint of docs/api.md, replies in the server's
 * own snake_case shapes. Browser-safe: it needs only `fetch`.
 *
 * @example
 * const client = createTidemarkClient({ baseUrl: "http://127.0.0.1:8787" });
 * const thread = await client.createThread({ title: "Tides" });
 * const run = await client.startRun(thread.thread_id, { input: { role: "user", content: "Hi" } });
 */
import { TidemarkApiError } from "./tidemark-api-error.js";
import type {
  AgentListView,
  CancelView,
  CheckpointView,
  DeletedMessageView,
  HistoryView,
  MessageView,
  OperationView,
  RunStepsView,
  RunView,
  StartRunBody,
  ThreadPage,
  ThreadView,
} from "./wire-types.js";

export { TidemarkApiError } from "./tidemark-api-error.js";

/** Options for {@link createTidemarkClient}. */
export interface TidemarkClientOptions {
  /** The server's address, e.g. `http://127.0.0.1:8787` (without `/v1`). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when the server has API keys. */
  apiKey?: string;
  /** The fetch to use (default the global one). */
  fetch?: typeof globalThis.fetch;
}

/** Per-request options: every call can be aborted (STYLE §7). */
export interface RequestOptions {
  signal?: AbortSignal;
}

/** A client of one Tidemark server. Every method throws {@link TidemarkApiError} for a non-2xx reply. */
export interface TidemarkClient {
  readonly baseUrl: string;
  /** Headers every request sends (Authorization when apiKey is set). */
  headers(): Record<string, string>;
  /** The events URL of a run (`?after=` when afterSeq > 0). */
  eventsUrl(runId: string, afterSeq?: number): string;
  fetch: typeof globalThis.fetch;
  /** A new thread; a `title` given here is the user's: the automatic title never replaces it. */
  createThread(body?: { title?: string; metadata?: Record<string, unknown> }, options?: RequestOptions): Promise<ThreadView>;
  getThread(threadId: string, options?: RequestOptions): Promise<ThreadView>;
  /** Sets the thread's title (trimmed, 1–200 characters); not a transition: `state_version` stays. */
  renameThread(threadId: string, title: string, options?: RequestOptions): Promise<ThreadView>;
  /** One page of the tenant's threads, most recently updated first; pass `next_cursor` back as `before`. */
  listThreads(options?: { limit?: number; before?: string | null } & RequestOptions): Promise<ThreadPage>;
  /** TERMINATE: cancels every run of the thread and deletes it (a Stop is {@link cancelRun}). */
  deleteThread(threadId: string, options?: RequestOptions): Promise<{ thread_id: string; status: "deleted"; cancelled_run_ids: string[] }>;
  getHistory(threadId: string, options?: { limit?: number } & RequestOptions): Promise<HistoryView>;
  listCheckpoints(threadId: string, options?: RequestOptions): Promise<{ thread_id: string; checkpoints: CheckpointView[] }>;
  startRun(threadId: string, body: StartRunBody, options?: { idempotencyKey?: string } & RequestOptions): Promise<RunView>;
  getRun(runId: string, options?: RequestOptions): Promise<RunView>;
  /** The run's steps and their statuses (DESIGN §11); live changes arrive as `step.updated` events. */
  getRunSteps(runId: string, options?: RequestOptions): Promise<RunStepsView>;
  /** The deployed agents a run may name (`agent` of {@link StartRunBody}), each with its config JSON Schema. */
  listAgents(options?: RequestOptions): Promise<AgentListView>;
  /** Stop. `waitMs`: answer only once the run is really terminal (or the wait ran out: `wait_timed_out`). */
  cancelRun(runId: string, options?: { reason?: string; waitMs?: number; expectedStateVersion?: number } & RequestOptions): Promise<CancelView>;
  approve(runId: string, options?: RequestOptions): Promise<RunView>;
  reject(runId: string, reason?: string, options?: RequestOptions): Promise<RunView>;
  /** A branch thread from `checkpoint_id` (sent as `from_checkpoint_id`). */
  fork(threadId: string, body: { checkpoint_id: string; metadata?: Record<string, unknown> }, options?: RequestOptions): Promise<ThreadView>;
  saveFragment(runId: string, body: { message_id: string; last_seq: number }, options?: RequestOptions): Promise<MessageView>;
  deleteMessage(threadId: string, messageId: string, options?: RequestOptions): Promise<DeletedMessageView>;
  listOperations(threadId: string, options?: RequestOptions): Promise<{ thread_id: string; operations: OperationView[] }>;
  confirmOperation(
    threadId: string,
    opId: string,
    body: { outcome: "committed" | "not_committed"; result?: unknown },
    options?: RequestOptions,
  ): Promise<OperationView>;
}

const segment = (id: string): string => encodeURIComponent(id);

/** Creates a {@link TidemarkClient}. Network failures reject with fetch's own error (a TypeError). */
export function createTidemarkClient(options: TidemarkClientOptions): TidemarkClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  // Bound, because a browser's fetch throws "Illegal invocation" when called as a method.
  const fetchFunction = options.fetch ?? globalThis.fetch.bind(globalThis);
  const headers = (): Record<string, string> => (options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {});

  async function request<T>(
    method: string,
    path: string,
    init: { json?: unknown; headers?: Record<string, string>; signal?: AbortSignal } = {},
  ): Promise<T> {
    init.signal?.throwIfAborted();
    const requestHeaders: Record<string, string> = { accept: "application/json", ...headers(), ...init.headers };
    if (init.json !== undefined) requestHeaders["content-type"] = "application/json";
    const response = await fetchFunction(`${baseUrl}${path}`, {
      method,
      headers: requestHeaders,
      body: init.json === undefined ? undefined : JSON.stringify(init.json),
      signal: init.signal,
    });
    if (!response.ok) throw await TidemarkApiError.fromResponse(response);
    return (await response.json()) as T;
  }
  const thread = (threadId: string, rest = "") => `/v1/threads/${segment(threadId)}${rest}`;
  const run = (runId: string, rest = "") => `/v1/runs/${segment(runId)}${rest}`;

  return {
    baseUrl,
    headers,
    fetch: fetchFunction,
    eventsUrl: (runId, afterSeq = 0) => `${baseUrl}${run(runId, "/events")}${afterSeq > 0 ? `?after=${afterSeq}` : ""}`,
    createThread: (body = {}, options = {}) =>
      request("POST", "/v1/threads", {
        json: { ...(body.title === undefined ? {} : { title: body.title }), ...(body.metadata === undefined ? {} : { metadata: body.metadata }) },
        signal: options.signal,
      }),
    getThread: (threadId, options = {}) => request("GET", thread(threadId), options),
    renameThread: (threadId, title, options = {}) => request("PATCH", thread(threadId), { json: { title }, signal: options.signal }),
    listThreads: ({ limit, before, signal } = {}) => {
      const query = new URLSearchParams();
      if (limit !== undefined) query.set("limit", String(limit));
      if (before) query.set("before", before);
      return request("GET", `/v1/threads${query.size > 0 ? `?${query.toString()}` : ""}`, { signal });
    },
    deleteThread: (threadId, options = {}) => request("DELETE", thread(threadId), options),
    getHistory: (threadId, { limit, signal } = {}) => request("GET", thread(threadId, `/history${limit === undefined ? "" : `?limit=${limit}`}`), { signal }),
    listCheckpoints: (threadId, options = {}) => request("GET", thread(threadId, "/checkpoints"), options),
    startRun: (threadId, body, { idempotencyKey, signal } = {}) =>
      request("POST", thread(threadId, "/runs"), {
        json: body,
        headers: idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey },
        signal,
      }),
    getRun: (runId, options = {}) => request("GET", run(runId), options),
    getRunSteps: (runId, options = {}) => request("GET", run(runId, "/steps"), options),
    listAgents: (options = {}) => request("GET", "/v1/agents", options),
    cancelRun: (runId, { reason, waitMs, expectedStateVersion, signal } = {}) =>
      request("POST", run(runId, `/cancel${waitMs ? `?wait=${Math.round(waitMs)}` : ""}`), {
        json: {
          ...(reason === undefined ? {} : { reason }),
          ...(expectedStateVersion === undefined ? {} : { expected_state_version: expectedStateVersion }),
        },
        signal,
      }),
    approve: (runId, options = {}) => request("POST", run(runId, "/approve"), { json: {}, signal: options.signal }),
    reject: (runId, reason, options = {}) => request("POST", run(runId, "/reject"), { json: reason === undefined ? {} : { reason }, signal: options.signal }),
    fork: (threadId, body, options = {}) =>
      request("POST", thread(threadId, "/fork"), {
        json: { from_checkpoint_id: body.checkpoint_id, ...(body.metadata === undefined ? {} : { metadata: body.metadata }) },
        signal: options.signal,
      }),
    saveFragment: (runId, body, options = {}) => request("POST", run(runId, "/fragments"), { json: body, signal: options.signal }),
    deleteMessage: (threadId, messageId, options = {}) => request("DELETE", thread(threadId, `/messages/${segment(messageId)}`), options),
    listOperations: (threadId, options = {}) => request("GET", thread(threadId, "/operations"), options),
    confirmOperation: (threadId, opId, body, options = {}) =>
      request("POST", thread(threadId, `/operations/${segment(opId)}/confirm`), { json: body, signal: options.signal }),
  };
}
