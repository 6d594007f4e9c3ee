/**
 * An AI SDK `ChatTransport` backed by a Tidemark server, so that `useChat()` (React, Vue,
 * Svelte) or any `AbstractChat` streams Tidemark runs, and its Stop is a real cancel.
 * Browser-safe: it needs only `fetch`.
 *
 * What it does, in AI SDK terms:
 * - **Chat → thread.** A chat id is mapped to one Tidemark thread, in this order: the transport's
 *   own memory; a chat id that is itself a thread id (`thr_…`, so `useChat({ id: threadId })`
 *   needs nothing else); the `threadIdFor(chatId)` hook (e.g. read from `localStorage`); else a
 *   new thread is created on first send, with metadata `{ai_sdk_chat_id}`, and
 *   `onThreadCreated` is told (persist it there, so that a reload finds the thread again).
 * - **`submit-message`** starts a run with the text of the last user message. The run is named by
 *   the client (`run_id`), so a Stop pressed before the create's reply arrived still targets it.
 *   Tidemark's history is append-only: an edited user message is sent as a new message.
 * - **`regenerate-message`** is Tidemark's *Continue* (DESIGN §9): a run without input from the
 *   thread's head checkpoint, so after a Stop the stopped step runs again with the confirmed
 *   context (the discarded text is never glued on). A published answer is never replaced: if the
 *   thread's last message is a published answer, regenerate fails with a clear error.
 * - Run-creation fields can be passed per request through the AI SDK's `body` option:
 *   `expected_state_version`, `multitask`, `on_disconnect`, `recovery_policy`,
 *   `resume_from_checkpoint_id` (e.g. `chat.sendMessage({ text }, { body: { multitask: "enqueue" } })`).
 *   A new message names the thread version the chat last saw (from its runs' events) as
 *   `expected_state_version`, so a thread that moved on elsewhere answers 409
 *   `state_version_conflict` (an `error` in the chat: reload or branch); the first message of a
 *   chat builds on the head. The request options `headers` and `metadata` are not used.
 * - **Stop.** `chat.stop()` / `useChat().stop()` aborts the request's signal; the transport then
 *   sends `POST /v1/runs/{id}/cancel` (waiting up to `stopWaitMs` until the run is really
 *   terminal). The next send on the same thread waits for that cancel first, so a Stop followed
 *   at once by a new message does not meet `run_in_progress`. `settled()` awaits every pending Stop.
 * - **Reconnect.** `reconnectToStream` looks up the thread's `active_run_id` and replays that run's
 *   events from the start of the stream buffer (`resumeStreamIsReplay`), then follows it live; it
 *   returns `null` when the thread has no active run.
 *
 * Events become UI message chunks: one assistant UI message per run (its id is the `run_id`),
 * `text-start/-delta/-end` per Tidemark message (`message.delta` … `message.published`), dynamic,
 * server-executed tool parts for `tool.started`/`tool.result` (input and output read from the
 * thread's history), and `messageMetadata.tidemark` with the run's status. Terminal events:
 * `run.completed` → `finish`; `run.failed` or a lost stream → `error` (the chat's status becomes
 * `error`); `run.cancelled` → `abort`, the AI SDK's own chunk for an aborted stream. Deltas after
 * `run.cancel_requested` are never shown: they are not part of the result.
 *
 * The AI SDK chat keeps the partial text the user saw after a Stop (in its own memory); Tidemark
 * publishes none of it. `lastRun(chatId)` gives the ids and `last_seq` to save it explicitly as a
 * fragment (`client.saveFragment`). Approvals of consequential tools go through the client
 * (`approve`/`reject`) while the stream stays open; `messageMetadata.tidemark.interrupted` says
 * which operation waits.
 *
 * @example
 * const transport = createTidemarkTransport({
 *   baseUrl: "http://127.0.0.1:8787",
 *   threadIdFor: (chatId) => localStorage.getItem(`thread:${chatId}`),
 *   onThreadCreated: ({ chatId, threadId }) => localStorage.setItem(`thread:${chatId}`, threadId),
 * });
 * const { messages, sendMessage, stop } = useChat({ id: "support", transport, resume: true });
 */
import type { ChatTransport, UIMessage } from "ai";
import { createTidemarkClient, TidemarkApiError, type TidemarkClient, type TidemarkClientOptions } from "./api-client.js";
import { createRunId } from "./create-run-id.js";
import { TidemarkClientError } from "./tidemark-client-error.js";
import type { TidemarkRunInfo, TidemarkStopOutcome, TidemarkTransportSettings } from "./ai-sdk-transport-types.js";
import { runChunks } from "./run-chunks.js";
import type { StartRunBody, ThreadView } from "./wire-types.js";

export type { TidemarkRunInfo, TidemarkStopOutcome, TidemarkTransportSettings } from "./ai-sdk-transport-types.js";

/** Options of {@link createTidemarkTransport}: a client, or what it takes to make one, plus settings. */
export type TidemarkTransportOptions = ({ client: TidemarkClient } | TidemarkClientOptions) & TidemarkTransportSettings;

/** The transport, with a few Tidemark extras beside the AI SDK's interface. */
export interface TidemarkChatTransport<UI_MESSAGE extends UIMessage = UIMessage> extends ChatTransport<UI_MESSAGE> {
  /** Reconnecting replays the run's stream from its start. */
  readonly resumeStreamIsReplay: true;
  readonly client: TidemarkClient;
  /** The thread a chat is mapped to, once known. */
  threadIdOf(chatId: string): string | undefined;
  /** The chat's latest run as the transport saw it (a copy). */
  lastRun(chatId: string): TidemarkRunInfo | undefined;
  /** Resolves once every Stop's cancel request has been answered (never rejects). */
  settled(): Promise<void>;
}

const BODY_FIELDS = ["expected_state_version", "multitask", "on_disconnect", "recovery_policy", "resume_from_checkpoint_id"] as const;
const STOP_ATTEMPTS = 3;

/** Creates an AI SDK chat transport for a Tidemark server (see the module comment for its behaviour). */
export function createTidemarkTransport<UI_MESSAGE extends UIMessage = UIMessage>(
  options: TidemarkTransportOptions,
): TidemarkChatTransport<UI_MESSAGE> {
  const client = "client" in options ? options.client : createTidemarkClient(options);
  const stopReason = options.stopReason ?? "user_pressed_stop";
  const stopWaitMs = options.stopWaitMs ?? 10_000;
  /** chat id → its thread id (a promise, so two sends at once create one thread). */
  const threads = new Map<string, Promise<string | undefined>>();
  const resolvedThreads = new Map<string, string>();
  const lastRuns = new Map<string, TidemarkRunInfo>();
  /** run id → its Stop's cancel request; thread id → the latest of those. */
  const stops = new Map<string, Promise<void>>();
  const threadStops = new Map<string, Promise<void>>();
  /** chat id → how many reconnects were asked for (a newer one supersedes an aborted older one). */
  const reconnectCounts = new Map<string, number>();

  function threadFor(chatId: string, create: boolean): Promise<string | undefined> {
    const known = threads.get(chatId);
    if (known) return known;
    const found = (async (): Promise<string | undefined> => {
      if (/^thr_[0-9a-z]{26}$/.test(chatId)) return chatId;
      const hooked = await options.threadIdFor?.(chatId);
      if (hooked) return hooked;
      if (!create) return undefined;
      const thread = await client.createThread({ metadata: { ai_sdk_chat_id: chatId } });
      await options.onThreadCreated?.({ chatId, threadId: thread.thread_id, thread });
      return thread.thread_id;
    })();
    threads.set(chatId, found);
    found.then(
      (threadId) => {
        if (threadId === undefined) threads.delete(chatId);
        else resolvedThreads.set(chatId, threadId);
      },
      () => threads.delete(chatId),
    );
    return found;
  }

  /** Sends the Stop's cancel (retried on network and server errors); never rejects. */
  function stopRun(chatId: string, threadId: string, runId: string): void {
    if (stops.has(runId)) return;
    const stopped = (async () => {
      let outcome: TidemarkStopOutcome = { chatId, threadId, runId };
      for (let attempt = 1; ; attempt++) {
        try {
          outcome = { chatId, threadId, runId, cancel: await client.cancelRun(runId, { reason: stopReason, waitMs: stopWaitMs }) };
          break;
        } catch (error) {
          const retryable = !TidemarkApiError.isInstance(error) || error.status >= 500;
          if (!retryable || attempt >= STOP_ATTEMPTS) {
            outcome = { chatId, threadId, runId, error };
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
        }
      }
      const info = lastRuns.get(chatId);
      if (info?.run_id === runId && outcome.cancel) {
        if (outcome.cancel.accepted_state_version !== null) info.state_version = outcome.cancel.accepted_state_version;
        info.resume_checkpoint_id = outcome.cancel.resume_checkpoint_id ?? info.resume_checkpoint_id;
        if (outcome.cancel.status === "cancelled" || outcome.cancel.status === "completed" || outcome.cancel.status === "failed") {
          info.status = outcome.cancel.status;
        }
      }
      try {
        options.onStop?.(outcome);
      } catch {
        // A listener's bug must not turn a delivered Stop into a failure.
      }
    })();
    const settle = stopped.finally(() => {
      stops.delete(runId);
      if (threadStops.get(threadId) === settle) threadStops.delete(threadId);
    });
    stops.set(runId, settle);
    threadStops.set(threadId, settle);
  }

  function newRunInfo(threadId: string, runId: string): TidemarkRunInfo {
    return {
      thread_id: threadId,
      run_id: runId,
      status: "running",
      last_seq: 0,
      last_message_id: null,
      state_version: null,
      published_message_id: null,
      resume_checkpoint_id: null,
      cancel_reason: null,
      failure_reason: null,
      discarded_stream_chars: null,
      interrupted: null,
    };
  }

  const transport: TidemarkChatTransport<UI_MESSAGE> = {
    resumeStreamIsReplay: true,
    client,

    async sendMessages({ chatId, messages, trigger, abortSignal, body }) {
      abortSignal?.throwIfAborted();
      const runId = createRunId();
      let threadId: string | undefined;
      let requested = false;
      // Stop = a real cancel, from the moment the create may have reached the server.
      const onAbort = (): void => {
        if (requested && threadId !== undefined) stopRun(chatId, threadId, runId);
      };
      abortSignal?.addEventListener("abort", onAbort, { once: true });
      const release = (): void => abortSignal?.removeEventListener("abort", onAbort);
      try {
        const overrides = runOverrides(body);
        const input = trigger === "submit-message" ? lastUserText(messages) : undefined;
        threadId = await threadFor(chatId, true);
        if (threadId === undefined) throw new TidemarkClientError("no_thread", "No Tidemark thread for this chat.");
        // A Stop of the thread's previous run must have landed before the next run starts (and
        // before a Continue reads the head, which that Stop moves).
        await threadStops.get(threadId);
        let runBody: StartRunBody;
        // Like the web app, the transport names the version it builds on (DESIGN §8): a thread
        // that moved on elsewhere (another tab, a saved fragment) answers 409, never silently mixes.
        const knownVersion = lastRuns.get(chatId)?.thread_id === threadId ? lastRuns.get(chatId)?.state_version : undefined;
        if (input !== undefined) {
          runBody = { input: { role: "user", content: input }, run_id: runId };
          if (knownVersion != null) runBody.expected_state_version = knownVersion;
        }
        else if (overrides.resume_from_checkpoint_id !== undefined) runBody = { run_id: runId };
        else runBody = { ...(await continuation(threadId)), run_id: runId };
        abortSignal?.throwIfAborted();
        requested = true;
        const run = await client.startRun(threadId, { ...runBody, ...overrides });
        abortSignal?.throwIfAborted();
        const info = newRunInfo(threadId, run.run_id);
        info.state_version = run.state_version;
        lastRuns.set(chatId, info);
        return runChunks({ client, info, streamOptions: options.stream, onEnd: release });
      } catch (error) {
        release();
        throw error;
      }
    },

    async reconnectToStream({ chatId, abortSignal }) {
      const ticket = (reconnectCounts.get(chatId) ?? 0) + 1;
      reconnectCounts.set(chatId, ticket);
      let stopRequested = false;
      let target: { threadId: string; runId: string } | undefined;
      const onAbort = (): void => {
        // The chat aborts an older resume when it starts a newer one in the same tick: not a Stop.
        queueMicrotask(() => {
          if (reconnectCounts.get(chatId) !== ticket) return;
          stopRequested = true;
          if (target) stopRun(chatId, target.threadId, target.runId);
        });
      };
      abortSignal?.addEventListener("abort", onAbort, { once: true });
      const release = (): void => abortSignal?.removeEventListener("abort", onAbort);
      try {
        const threadId = abortSignal?.aborted ? undefined : await threadFor(chatId, false);
        const thread = threadId === undefined ? undefined : await activeThread(threadId);
        if (threadId === undefined || thread?.active_run_id == null) {
          release();
          return null;
        }
        target = { threadId, runId: thread.active_run_id };
        if (stopRequested) stopRun(chatId, threadId, thread.active_run_id);
        if (abortSignal?.aborted) {
          release();
          return null;
        }
        const previous = lastRuns.get(chatId);
        const info = previous?.run_id === thread.active_run_id ? { ...previous, last_seq: 0 } : newRunInfo(threadId, thread.active_run_id);
        info.state_version = Math.max(info.state_version ?? 0, thread.state_version);
        lastRuns.set(chatId, info);
        return runChunks({ client, info, streamOptions: options.stream, onEnd: release });
      } catch (error) {
        release();
        throw error;
      }
    },

    threadIdOf: (chatId) => resolvedThreads.get(chatId),
    lastRun: (chatId) => {
      const info = lastRuns.get(chatId);
      return info ? { ...info } : undefined;
    },
    async settled() {
      while (stops.size > 0) await Promise.all([...stops.values()]);
    },
  };

  /** The thread, or undefined if it is gone (nothing to resume). */
  async function activeThread(threadId: string): Promise<ThreadView | undefined> {
    try {
      return await client.getThread(threadId);
    } catch (error) {
      if (TidemarkApiError.isInstance(error) && error.status === 404) return undefined;
      throw error;
    }
  }

  /** Continue: a run without input from the thread's head, unless the head is a published answer. */
  async function continuation(threadId: string): Promise<StartRunBody> {
    const [thread, history] = await Promise.all([client.getThread(threadId), client.getHistory(threadId, { limit: 1 })]);
    const last = history.messages.at(-1);
    if (last && last.role !== "user" && last.publication_status === "published") {
      throw new TidemarkClientError(
        "answer_published",
        "Tidemark keeps published answers (its history is append-only), so it cannot regenerate this one: send a new message instead, or fork the thread.",
      );
    }
    return { resume_from_checkpoint_id: thread.head_checkpoint_id, expected_state_version: thread.state_version };
  }

  return transport;
}

/** The text of the last message, which must be the user's. */
function lastUserText(messages: readonly UIMessage[]): string {
  const last = messages.at(-1);
  if (!last || last.role !== "user") {
    throw new TidemarkClientError("no_user_text", "A Tidemark run starts from a user message; tool results and approvals go through the Tidemark client.");
  }
  const text = last.parts
    .map((part) => (part.type === "text" ? part.text : ""))
    .filter((part) => part.length > 0)
    .join("\n");
  if (text.trim().length === 0) throw new TidemarkClientError("no_user_text", "The Tidemark transport sends text; this message has none.");
  return text;
}

/** The run-creation fields a request may set through the AI SDK's `body` option. */
function runOverrides(body: object | undefined): Partial<StartRunBody> {
  if (!body) return {};
  const source = body as Record<string, unknown>;
  const picked: Record<string, unknown> = {};
  for (const field of BODY_FIELDS) if (source[field] !== undefined) picked[field] = source[field];
  return picked as Partial<StartRunBody>;
}
