import type { WebSocket } from "ws";
import { createId, isTerminalStatus, TidemarkError, type MessageRecord, type Timers } from "../../core/index.js";
import type { Logger } from "../../core/logger.js";
import { EmergencyStop, LiveBridge, LiveInterruption, UserStartedSpeaking, UserStoppedSpeaking, type InterruptionOptions, type LiveTurn } from "../../live/index.js";
import type { Runtime } from "../../runtime/index.js";
import { followEvents } from "../../stream/index.js";
import { parseClientFrame, type ClientFrame, type InterruptionUpdate } from "./live-frames.js";

/** How long a cut turn's run may take to end before the session stops waiting for it. */
const RUN_END_WAIT_MS = 30_000;

export interface LiveSessionOptions {
  runtime: Runtime;
  tenantId: string;
  threadId: string;
  socket: WebSocket;
  logger: Logger;
  /** The agent of the turns; default the thread's (its last run's), else `chat`. */
  agent?: string;
  timers?: Timers;
}

/**
 * One client's live session on a thread (DESIGN §12): its frames drive a {@link LiveBridge} whose
 * one route runs each user turn as a run of the thread's agent, publishing only what was heard.
 */
export class LiveSession {
  readonly #options: LiveSessionOptions;
  readonly #bridge: LiveBridge;
  /** The run of the turn being played, for the frames that name it. */
  #runId: string | null = null;

  constructor(options: LiveSessionOptions) {
    this.#options = options;
    const bridge = (this.#bridge = new LiveBridge({
      timers: options.timers,
      onError: (error) =>
        options.logger.warn({ run_id: this.#runId, thread_id: options.threadId, tenant_id: options.tenantId, error: String(error) }, "a live turn failed"),
    }));
    bridge
      .on(UserStoppedSpeaking)
      .interruptOn([UserStartedSpeaking, EmergencyStop])
      .stream((event, turn) => this.#runTurn(event, turn))
      .broadcast();
    bridge.subscribe({
      turnStarted: ({ messageId, interruptible }) => this.#send({ type: "turn.started", run_id: this.#runId, message_id: messageId, interruptible }),
      delta: (messageId, text) => this.#send({ type: "output.delta", message_id: messageId, text }),
      done: (messageId) => this.#send({ type: "output.done", message_id: messageId }),
      paused: () => this.#send({ type: "output.paused" }),
      resumed: () => this.#send({ type: "output.resumed" }),
      interrupted: ({ messageId, heardChars, reason }) =>
        this.#send({ type: "turn.interrupted", run_id: this.#runId, message_id: messageId, heard_chars: heardChars, reason }),
    });
  }

  /** Says the session is ready, with its options. */
  start(): void {
    this.#send({ type: "session.ready", thread_id: this.#options.threadId, ...this.#settings() });
  }

  /** Takes one frame from the client; a bad one gets an `error` frame, never a closed socket. */
  receive(data: Buffer, isBinary: boolean): void {
    const parsed = parseClientFrame(data, isBinary);
    if ("problem" in parsed) {
      this.#send({ type: "error", ...parsed.problem });
      return;
    }
    this.#apply(parsed.frame);
  }

  /** The client went away: the turn is cut at what was heard, and the session waits for it to stop. */
  close(): Promise<void> {
    return this.#bridge.close("disconnected");
  }

  #apply(frame: ClientFrame): void {
    switch (frame.type) {
      case "user.started_speaking":
        return this.#bridge.emit(new UserStartedSpeaking());
      case "user.stopped_speaking":
        return this.#bridge.emit(new UserStoppedSpeaking(frame.transcript ?? ""));
      case "emergency_stop":
        return this.#bridge.emit(new EmergencyStop());
      case "playback":
        if (!this.#bridge.ack(frame.message_id, frame.played_chars)) {
          this.#send({ type: "error", error: "message_not_found", message: "No answer with this message_id was sent in this session." });
        }
        return;
      case "session.update":
        this.#bridge.configure({ interruption: frame.interruption && interruptionOf(frame.interruption), playbackAcks: frame.playback_acks });
        this.#send({ type: "session.updated", ...this.#settings() });
    }
  }

  #settings() {
    const options = this.#bridge.interruption;
    return {
      interruption: {
        min_interruption_ms: options.minInterruptionMs,
        min_interruption_words: options.minInterruptionWords,
        false_interruption_timeout_ms: options.falseInterruptionTimeoutMs,
        resume_false_interruption: options.resumeFalseInterruption,
        interruptible: options.interruptible,
      },
      playback_acks: this.#bridge.playbackAcks,
    };
  }

  /** A user turn: a run of the thread's agent on the transcript, its answer played, published once heard. */
  async *#runTurn(event: UserStoppedSpeaking, turn: LiveTurn): AsyncGenerator<{ messageId: string; text: string }> {
    const { runtime, tenantId, threadId } = this.#options;
    const runId = createId("run");
    const detach = runtime.attachLiveOutput(tenantId, runId, turn.output);
    let cancelling: Promise<unknown> | undefined;
    // The cut comes from the bridge: the run is stopped, and its cancel publishes what was heard.
    const onCut = (): void => {
      const reason = turn.signal.reason instanceof LiveInterruption ? turn.signal.reason.reason : "interrupted";
      cancelling = runtime.cancelRun(tenantId, runId, reason).then((result) => {
        if (result.kind === "accepted" && result.heardMessage) this.#published(result.heardMessage);
      });
    };
    try {
      const program = await this.#agentOfThread();
      if (turn.signal.aborted) return;
      const { run } = await runtime.startRun({
        tenantId,
        threadId,
        runId,
        input: { role: "user", content: event.transcript },
        // Its playback lives in this session: a run recovered elsewhere after a crash could not
        // know what was heard, so it fails instead of publishing unheard text.
        recoveryPolicy: "fail",
        ...program,
      });
      this.#runId = run.runId;
      turn.signal.addEventListener("abort", onCut, { once: true });
      if (turn.signal.aborted) onCut();
      const buffer = await runtime.openEvents(tenantId, run, 0);
      if (!buffer) return;
      for await (const runEvent of followEvents(buffer, 0, turn.signal)) {
        if (runEvent.type === "message.delta") yield { messageId: runEvent.message_id, text: runEvent.text };
        else if (runEvent.type === "message.published" && runEvent.role === "assistant") {
          // The run has the thread to itself: its message is among the newest.
          const recent = await runtime.store.listMessages(tenantId, threadId, { limit: 8 });
          const message = recent.find((candidate) => candidate.messageId === runEvent.message_id);
          if (message) this.#published(message);
        } else if (runEvent.type === "run.cancelled" && !turn.signal.aborted) {
          // Stopped from elsewhere (an HTTP Stop, TERMINATE): the client stops playing at what the
          // cancel published as heard, then hears of that publication.
          const heard = await this.#heardPublishedByCancel(runId);
          turn.stopped(heard && { messageId: heard.messageId, content: heard.content });
          if (heard) this.#published(heard);
        }
      }
    } catch (error) {
      if (TidemarkError.isInstance(error)) this.#send({ type: "error", error: error.code, message: error.message });
      else throw error;
    } finally {
      turn.signal.removeEventListener("abort", onCut);
      await cancelling?.catch((error: unknown) => this.#options.logger.warn({ run_id: runId, thread_id: threadId, tenant_id: tenantId, error: String(error) }, "a live turn's cancel failed"));
      // The next turn (and an interrupt handler) waits until this run has really ended.
      const ended = this.#runId === runId ? await runtime.waitForTerminal(tenantId, runId, RUN_END_WAIT_MS) : undefined;
      detach();
      if (ended && isTerminalStatus(ended.status)) this.#send({ type: "turn.ended", run_id: runId, status: ended.status });
      if (this.#runId === runId) this.#runId = null;
    }
  }

  /** The heard answer a cancel from elsewhere published with it, if any. */
  async #heardPublishedByCancel(runId: string): Promise<MessageRecord | undefined> {
    const { runtime, tenantId, threadId } = this.#options;
    const [last] = await runtime.store.listMessages(tenantId, threadId, { limit: 1 });
    return last?.runId === runId && last.interrupted ? last : undefined;
  }

  /** The agent and config of the thread's last run, unless the session names an agent. */
  async #agentOfThread(): Promise<{ agent?: string; config?: unknown }> {
    const { runtime, tenantId, threadId, agent } = this.#options;
    if (agent !== undefined) return { agent };
    const [last] = await runtime.store.listMessages(tenantId, threadId, { limit: 1 });
    const run = last?.runId ? await runtime.store.getRun(tenantId, last.runId) : undefined;
    return run ? { agent: run.agent, config: run.config ? (JSON.parse(run.config) as unknown) : undefined } : {};
  }

  #published(message: MessageRecord): void {
    this.#send({
      type: "message.published",
      message_id: message.messageId,
      content: message.content,
      interrupted: message.interrupted,
      state_version: message.stateVersion,
    });
  }

  #send(frame: Record<string, unknown>): void {
    const { socket } = this.#options;
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame));
  }
}

function interruptionOf(update: InterruptionUpdate): Partial<InterruptionOptions> {
  const options: Partial<InterruptionOptions> = {};
  if (update.min_interruption_ms !== undefined) options.minInterruptionMs = update.min_interruption_ms;
  if (update.min_interruption_words !== undefined) options.minInterruptionWords = update.min_interruption_words;
  if (update.false_interruption_timeout_ms !== undefined) options.falseInterruptionTimeoutMs = update.false_interruption_timeout_ms;
  if (update.resume_false_interruption !== undefined) options.resumeFalseInterruption = update.resume_false_interruption;
  if (update.interruptible !== undefined) options.interruptible = update.interruptible;
  return options;
}
