import type { RunEvent } from "../../../core/index.js";
import type { AgUiEvent } from "./ag-ui-event.js";

/** What the translator reads from history: the parts of a tool call the run events do not carry. */
export interface AgUiHistoryLookup {
  /** A published assistant message's tool call: its input (JSON text) and the message holding it. */
  toolCall(toolCallId: string): Promise<{ input: string; messageId: string } | undefined>;
  /** A published message's content (a tool result). */
  messageContent(messageId: string): Promise<string | undefined>;
}

/** One translated native event: the AG-UI events to send, and whether the AG-UI run ended with them. */
export interface AgUiTranslation {
  events: AgUiEvent[];
  /** The last event sent is `RUN_FINISHED` or `RUN_ERROR`: the response ends. */
  isFinal: boolean;
  /** Ended on the `interrupt` outcome: the native run waits for an approval, it has not ended. */
  isInterrupt: boolean;
}

/** A plan step as `STATE_SNAPSHOT` shows it (under `tidemark.steps` of the state). */
interface StepView {
  id: string;
  title: string | null;
  status: string;
  depends_on: string[];
  parent_id: string | null;
}

/**
 * Turns a native run's events (DESIGN §7) into AG-UI events, in an order the client's verifier
 * accepts: a message is started on its first delta and ended when published (or when the run
 * ends), several at once for a plan's parallel steps;
 * a tool call is started, given its arguments and ended at once (the call is complete when the
 * tool starts), its result sent with `tool.result`; plan steps go out as a whole-state snapshot.
 * Deltas after the cancel was accepted are dropped: they are never published.
 */
export class AgUiTranslator {
  readonly #threadId: string;
  readonly #runId: string;
  readonly #clientState: unknown;
  readonly #history: AgUiHistoryLookup;
  /** Messages started and not ended yet: a plan's steps stream several at once. */
  readonly #openMessages = new Set<string>();
  #isStopping = false;
  readonly #steps = new Map<string, StepView>();
  /** A prepared consequential operation's tool call, for its interrupt. */
  readonly #toolCallOfOperation = new Map<string, string>();

  constructor(options: { threadId: string; runId: string; clientState: unknown; history: AgUiHistoryLookup }) {
    this.#threadId = options.threadId;
    this.#runId = options.runId;
    this.#clientState = options.clientState;
    this.#history = options.history;
  }

  /** `RUN_STARTED`, naming the native run and thread in its metadata. */
  started(nativeRunId: string, nativeThreadId: string): AgUiEvent {
    return {
      type: "RUN_STARTED",
      threadId: this.#threadId,
      runId: this.#runId,
      metadata: { tidemark_run_id: nativeRunId, tidemark_thread_id: nativeThreadId },
    };
  }

  /** The AG-UI events for one native event. */
  async translate(event: RunEvent): Promise<AgUiTranslation> {
    const events: AgUiEvent[] = [];
    const done = (isFinal = false, isInterrupt = false): AgUiTranslation => ({ events, isFinal, isInterrupt });
    switch (event.type) {
      case "message.delta": {
        if (this.#isStopping || event.text === "") return done();
        if (!this.#openMessages.has(event.message_id)) {
          this.#openMessages.add(event.message_id);
          events.push({ type: "TEXT_MESSAGE_START", messageId: event.message_id, role: "assistant" });
        }
        events.push({ type: "TEXT_MESSAGE_CONTENT", messageId: event.message_id, delta: event.text });
        return done();
      }
      case "message.published":
        if (this.#openMessages.delete(event.message_id)) events.push({ type: "TEXT_MESSAGE_END", messageId: event.message_id });
        return done();
      case "tool.started": {
        const call = await this.#history.toolCall(event.tool_call_id);
        events.push({
          type: "TOOL_CALL_START",
          toolCallId: event.tool_call_id,
          toolCallName: event.tool,
          ...(call ? { parentMessageId: call.messageId } : {}),
        });
        if (call && call.input !== "") events.push({ type: "TOOL_CALL_ARGS", toolCallId: event.tool_call_id, delta: call.input });
        events.push({ type: "TOOL_CALL_END", toolCallId: event.tool_call_id });
        return done();
      }
      case "tool.result": {
        const content = (await this.#history.messageContent(event.message_id)) ?? "";
        events.push({ type: "TOOL_CALL_RESULT", messageId: event.message_id, toolCallId: event.tool_call_id, content, role: "tool" });
        return done();
      }
      case "tool.prepared":
        this.#toolCallOfOperation.set(event.op_id, event.tool_call_id);
        return done();
      case "step.updated":
        this.#steps.set(event.step_id, {
          id: event.step_id,
          title: event.title,
          status: event.status,
          depends_on: event.depends_on,
          parent_id: event.parent_step_id,
        });
        events.push({ type: "STATE_SNAPSHOT", snapshot: this.#snapshot() });
        return done();
      case "run.cancel_requested":
        this.#isStopping = true;
        this.#closeMessages(events);
        return done();
      case "run.interrupted":
        this.#closeMessages(events);
        events.push(
          this.#finished({
            type: "interrupt",
            interrupts: [
              {
                id: event.op_id,
                reason: "tool_approval",
                message: `The tool "${event.tool}" is waiting for approval.`,
                ...(this.#toolCallOfOperation.has(event.op_id) ? { toolCallId: this.#toolCallOfOperation.get(event.op_id) } : {}),
                metadata: { tool: event.tool, idempotency_key: event.idempotency_key, preview: event.preview, tidemark_run_id: event.run_id },
              },
            ],
          }),
        );
        return done(true, true);
      case "run.completed":
        this.#closeMessages(events);
        events.push({ ...this.#finished({ type: "success" }), result: { published_message_id: event.published_message_id } });
        return done(true);
      case "run.cancelled":
        this.#closeMessages(events);
        events.push({
          ...this.#finished({ type: "cancelled" }),
          metadata: { reason: event.reason, discarded_stream_chars: event.discarded_stream_chars, external_effects: event.external_effects },
        });
        return done(true);
      case "run.failed":
        events.push({ type: "RUN_ERROR", message: event.message, code: event.reason });
        return done(true);
      default:
        return done();
    }
  }

  #finished(outcome: Extract<AgUiEvent, { type: "RUN_FINISHED" }>["outcome"]): Extract<AgUiEvent, { type: "RUN_FINISHED" }> {
    return { type: "RUN_FINISHED", threadId: this.#threadId, runId: this.#runId, outcome };
  }

  /** Ends every open message (the run stopped, failed or paused: what is not published never will be). */
  #closeMessages(events: AgUiEvent[]): void {
    for (const messageId of this.#openMessages) events.push({ type: "TEXT_MESSAGE_END", messageId });
    this.#openMessages.clear();
  }

  /** The client's state with the plan's steps under `tidemark.steps` (a snapshot replaces the whole state). */
  #snapshot(): Record<string, unknown> {
    const base = typeof this.#clientState === "object" && this.#clientState !== null && !Array.isArray(this.#clientState) ? this.#clientState : {};
    return { ...base, tidemark: { run_id: this.#runId, steps: [...this.#steps.values()] } };
  }
}
