/**
 * A Tidemark run's events as AI SDK UI message chunks, for the transport: one assistant UI
 * message per run, text parts per Tidemark message, dynamic tool parts, and the terminal chunk
 * (`finish`, `error`, or `abort` after a cancel). Deltas after `run.cancel_requested` are dropped.
 */
import type { UIMessageChunk } from "ai";
import type { RunEvent } from "../core/run-event.js";
import type { TidemarkRunInfo, TidemarkTransportSettings } from "./ai-sdk-transport-types.js";
import type { TidemarkClient } from "./api-client.js";
import { openRunEventStream, type RunEventStream, type StreamNotice } from "./event-stream.js";

interface RunChunkOptions {
  client: TidemarkClient;
  /** Updated in place as events arrive. */
  info: TidemarkRunInfo;
  streamOptions: TidemarkTransportSettings["stream"];
  /** Called once when the chunk stream ends or is cancelled. */
  onEnd: () => void;
}

/** The run's events, replayed from the start of its buffer, as UI message chunks. */
export function runChunks({ client, info, streamOptions, onEnd }: RunChunkOptions): ReadableStream<UIMessageChunk> {
  let controller!: ReadableStreamDefaultController<UIMessageChunk>;
  let events: RunEventStream | undefined;
  let closed = false;
  let queue: Promise<void> = Promise.resolve();
  let cancelRequested = false;
  let reconnecting = false;
  const openTexts = new Set<string>();
  /** tool_call_id → tool name, for calls without a result yet. */
  const openTools = new Map<string, string>();

  const push = (chunk: UIMessageChunk): void => {
    if (!closed) controller.enqueue(chunk);
  };
  const metadata = (): UIMessageChunk => ({
    type: "message-metadata",
    messageMetadata: { tidemark: { ...info, connection: reconnecting ? "reconnecting" : "connected" } },
  });
  const finish = (last: UIMessageChunk[]): void => {
    if (closed) return;
    for (const id of openTexts) push({ type: "text-end", id });
    openTexts.clear();
    for (const [toolCallId] of openTools) {
      push({
        type: "tool-output-error",
        toolCallId,
        errorText: `The run ended (${info.status}) before this tool's result was published; the thread's operations show its true outcome.`,
        providerExecuted: true,
        dynamic: true,
      });
    }
    openTools.clear();
    push(metadata());
    for (const chunk of last) push(chunk);
    closed = true;
    events?.close();
    controller.close();
    onEnd();
  };
  const fail = (errorText: string): void => finish([{ type: "error", errorText }]);

  async function onEvent(event: RunEvent): Promise<void> {
    info.last_seq = event.seq;
    switch (event.type) {
      case "run.started":
        if (event.attempt > 1) {
          // A new attempt after the worker was lost: the earlier attempt's unpublished text is gone.
          for (const id of openTexts) push({ type: "text-end", id });
          openTexts.clear();
          push(metadata());
        }
        return;
      case "message.delta":
        // The honest boundary: nothing after the accepted cancel is part of the result.
        if (cancelRequested) return;
        if (!openTexts.has(event.message_id)) {
          openTexts.add(event.message_id);
          push({ type: "text-start", id: event.message_id });
        }
        info.last_message_id = event.message_id;
        push({ type: "text-delta", id: event.message_id, delta: event.text });
        return;
      case "message.published":
        info.state_version = Math.max(info.state_version ?? 0, event.state_version);
        if (event.role === "assistant") info.published_message_id = event.message_id;
        if (openTexts.delete(event.message_id)) push({ type: "text-end", id: event.message_id });
        return;
      case "checkpoint.saved":
        info.state_version = Math.max(info.state_version ?? 0, event.state_version);
        return;
      case "tool.started": {
        openTools.set(event.tool_call_id, event.tool);
        const input = await toolInput(client, info.thread_id, event.tool_call_id);
        push({ type: "tool-input-available", toolCallId: event.tool_call_id, toolName: event.tool, input, providerExecuted: true, dynamic: true });
        return;
      }
      case "tool.result": {
        if (!openTools.has(event.tool_call_id)) {
          const input = await toolInput(client, info.thread_id, event.tool_call_id);
          push({ type: "tool-input-available", toolCallId: event.tool_call_id, toolName: event.tool, input, providerExecuted: true, dynamic: true });
        }
        openTools.delete(event.tool_call_id);
        const content = await messageContent(client, info.thread_id, event.message_id);
        if (event.is_error) {
          push({ type: "tool-output-error", toolCallId: event.tool_call_id, errorText: content ?? "The tool failed.", providerExecuted: true, dynamic: true });
        } else {
          push({ type: "tool-output-available", toolCallId: event.tool_call_id, output: parseJson(content), providerExecuted: true, dynamic: true });
        }
        return;
      }
      case "run.interrupted":
        info.status = "interrupted";
        info.interrupted = { op_id: event.op_id, tool: event.tool, idempotency_key: event.idempotency_key, preview: event.preview };
        push(metadata());
        return;
      case "run.resumed":
        info.status = "running";
        info.interrupted = null;
        push(metadata());
        return;
      case "run.cancel_requested":
        cancelRequested = true;
        info.status = "cancel_requested";
        info.cancel_reason = event.reason;
        info.state_version = Math.max(info.state_version ?? 0, event.accepted_state_version);
        info.resume_checkpoint_id = event.resume_checkpoint_id;
        push(metadata());
        return;
      case "run.cancelling":
        info.status = "cancelling";
        push(metadata());
        return;
      case "run.cancelled":
        info.status = "cancelled";
        info.cancel_reason = event.reason;
        info.resume_checkpoint_id = event.resume_checkpoint_id ?? info.resume_checkpoint_id;
        info.discarded_stream_chars = event.discarded_stream_chars;
        info.interrupted = null;
        finish([{ type: "abort", reason: event.reason }]);
        return;
      case "run.completed":
        info.status = "completed";
        info.state_version = Math.max(info.state_version ?? 0, event.state_version);
        info.published_message_id = event.published_message_id ?? info.published_message_id;
        finish([{ type: "finish", finishReason: "stop" }]);
        return;
      case "run.failed":
        info.status = "failed";
        info.failure_reason = event.reason;
        fail(`The run failed (${event.reason}): ${event.message}`);
        return;
      case "tool.prepared":
      case "tool.committed":
      case "stats.updated":
        return;
    }
  }

  function onNotice(notice: StreamNotice): Promise<void> | void {
    if (closed) return;
    switch (notice.kind) {
      case "event":
        return onEvent(notice.event);
      case "reload":
        return fail(
          notice.reason === "expired"
            ? "The run's stream buffer has expired: reload the thread's history, which is the truth."
            : "Events of the run were missed: reload the thread's history, which is the truth.",
        );
      case "connection":
        if (notice.state === "failed") {
          const failure = notice.failure;
          return fail(`Lost the run's event stream${failure ? ` (${failure.reason}): ${failure.message}` : "."}`);
        }
        if (notice.state === "reconnecting" && !reconnecting) {
          reconnecting = true;
          push(metadata());
        } else if (notice.state === "connected" && reconnecting) {
          reconnecting = false;
          push(metadata());
        }
        return;
    }
  }

  return new ReadableStream<UIMessageChunk>({
    start(streamController) {
      controller = streamController;
      push({ type: "start", messageId: info.run_id });
      push(metadata());
      events = openRunEventStream(
        client,
        info.run_id,
        (notice) => {
          // Serial, so that a tool's history lookup never reorders the chunks after it.
          queue = queue
            .then(() => onNotice(notice))
            .catch((error: unknown) => fail(`The run's events could not be shown: ${error instanceof Error ? error.message : String(error)}`));
        },
        { ...streamOptions, afterSeq: 0 },
      );
      void events.done.then(() => queue).then(() => {
        if (!closed) fail("The run's event stream ended before the run did.");
      });
    },
    cancel() {
      // The chat went away (a Stop or an unmount): stop listening. Only a Stop cancels the run.
      if (closed) return;
      closed = true;
      events?.close();
      onEnd();
    },
  });
}

/** A tool call's input, from the assistant message that asked for it (recent history). */
async function toolInput(client: TidemarkClient, threadId: string, toolCallId: string): Promise<unknown> {
  try {
    const history = await client.getHistory(threadId, { limit: 50 });
    for (const message of [...history.messages].reverse()) {
      const call = message.tool_calls?.find((candidate) => candidate.tool_call_id === toolCallId);
      if (call) return parseJson(call.input);
    }
  } catch {
    // The input is a convenience for the UI; the stream goes on without it.
  }
  return undefined;
}

/** A published message's content (recent history), or undefined. */
async function messageContent(client: TidemarkClient, threadId: string, messageId: string): Promise<string | undefined> {
  try {
    const history = await client.getHistory(threadId, { limit: 50 });
    return history.messages.find((message) => message.message_id === messageId)?.content;
  } catch {
    return undefined;
  }
}

function parseJson(text: string | undefined): unknown {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
