/**
 * A run's events → the Agent Server's stream parts, per stream mode. One event may give several
 * parts; part `k` of the event with seq `n` has the SSE id `n-k`, so a client resumes between two
 * parts of one event too. `values` parts hold the messages published up to the event's version,
 * so a replay gives the same parts as the live stream did.
 */
import type { MessageRecord, RunEvent, RunRecord } from "../../../core/index.js";
import type { StreamMode } from "./langgraph-schemas.js";
import { aiMessageChunkJson, langChainMessage } from "./langgraph-messages.js";
import { threadValues } from "./langgraph-views.js";

/** One part of the stream: its SSE `event` and `data` (or, for a delta, its data already as JSON). */
export type StreamPart = { event: string; data: unknown } | { event: string; json: string };

/** What translating a run's events needs. */
export interface FrameSource {
  run: RunRecord;
  modes: ReadonlySet<StreamMode>;
  /** The thread's messages as they now stand (read again when a published one is not known yet). */
  loadMessages(): Promise<MessageRecord[]>;
  /**
   * When each deleted fragment or rolled-back input left the visible result, by message id (read
   * only when a message is deleted), so a replay shows a state as it was when the event was live.
   */
  loadDeletionVersions(): Promise<ReadonlyMap<string, number>>;
}

/** The graph node an Agent Server client sees a message come from. */
const nodeOf = (message: MessageRecord): string => (message.role === "tool" ? "tools" : "agent");

/** Translates a run's events in order; keeps the thread's messages between events. */
export class LangGraphFrames {
  readonly #source: FrameSource;
  #messages: MessageRecord[] | undefined;
  /** `JSON.stringify(this.#tupleMetadata())`, the same for every part of the run. */
  #tupleMetadataJson: string | undefined;
  #deletedAt: ReadonlyMap<string, number> = new Map();

  constructor(source: FrameSource) {
    this.#source = source;
  }

  /** The stream parts of `event` for the requested modes (often none). */
  async partsOf(event: RunEvent): Promise<StreamPart[]> {
    const { modes, run } = this.#source;
    const parts: StreamPart[] = [];
    switch (event.type) {
      case "run.started":
        parts.push({ event: "metadata", data: { run_id: run.runId, thread_id: run.threadId, attempt: event.attempt } });
        if (modes.has("values")) parts.push({ event: "values", data: await this.#valuesAtStart() });
        break;
      case "message.delta":
        // `[aiMessageChunk, metadata]`, serialized here: it is most of a stream's parts.
        if (modes.has("messages-tuple")) {
          this.#tupleMetadataJson ??= JSON.stringify(this.#tupleMetadata());
          parts.push({ event: "messages", json: `[${aiMessageChunkJson(event.message_id, event.text)},${this.#tupleMetadataJson}]` });
        }
        break;
      case "message.published": {
        const message = await this.#message(event.message_id);
        if (!message) break;
        if (modes.has("messages-tuple") && (message.role === "tool" || (message.toolCalls?.length ?? 0) > 0)) {
          parts.push({ event: "messages", data: [langChainMessage(message), this.#tupleMetadata()] });
        }
        if (modes.has("updates") && message.role !== "user") parts.push({ event: "updates", data: { [nodeOf(message)]: { messages: [langChainMessage(message)] } } });
        if (modes.has("values")) parts.push({ event: "values", data: threadValues(this.#messages ?? [], event.state_version, this.#deletedAt) });
        break;
      }
      case "run.interrupted": {
        const interrupt = [{ id: event.op_id, value: { tool: event.tool, op_id: event.op_id, preview: event.preview } }];
        if (modes.has("updates")) parts.push({ event: "updates", data: { __interrupt__: interrupt } });
        break;
      }
      case "run.failed":
        parts.push({ event: "error", data: { error: event.reason, message: event.message } });
        break;
      default:
        break;
    }
    return parts;
  }

  #tupleMetadata() {
    const { run } = this.#source;
    return { tags: [], langgraph_node: "agent", run_id: run.runId, thread_id: run.threadId, assistant_id: run.agent };
  }

  async #message(messageId: string): Promise<MessageRecord | undefined> {
    let found = this.#messages?.find((message) => message.messageId === messageId);
    if (!found) {
      found = (await this.#load()).find((message) => message.messageId === messageId);
    }
    return found;
  }

  /** The values when the run started: the thread up to the run's input (or, without one, before the run). */
  async #valuesAtStart() {
    const { run } = this.#source;
    const messages = this.#messages ?? (await this.#load());
    const input = run.inputMessageId === null ? undefined : await this.#message(run.inputMessageId);
    if (input) return threadValues(this.#messages ?? messages, input.stateVersion, this.#deletedAt);
    const own = messages.filter((message) => message.runId === run.runId).map((message) => message.stateVersion);
    return threadValues(messages, own.length > 0 ? Math.min(...own) - 1 : undefined, this.#deletedAt);
  }

  /** Reads the thread's messages again (and, if any is deleted, when each left the visible result). */
  async #load(): Promise<MessageRecord[]> {
    const messages = await this.#source.loadMessages();
    if (messages.some((message) => message.publicationStatus === "deleted")) this.#deletedAt = await this.#source.loadDeletionVersions();
    this.#messages = messages;
    return messages;
  }
}

/** The SSE frame of part `index` of the event with `seq`. */
export function formatPart(part: StreamPart, seq: number, index: number): string {
  return `id: ${seq}-${index}\nevent: ${part.event}\ndata: ${"json" in part ? part.json : JSON.stringify(part.data)}\n\n`;
}

/** Where a client resumes: after part `index` of the event with `seq` (`-1`: from the start). */
export interface StreamCursor {
  seq: number;
  index: number;
}

/** `Last-Event-ID` as a cursor: `-1` (or none, with `fromStart`) is the start; `n-k` or `n`; undefined when malformed. */
export function parseLastEventId(value: string): StreamCursor | undefined {
  const text = value.trim();
  if (text === "-1") return { seq: 0, index: Number.POSITIVE_INFINITY };
  const match = /^(\d{1,15})(?:-(\d{1,6}))?$/.exec(text);
  if (!match) return undefined;
  return { seq: Number(match[1]), index: match[2] === undefined ? Number.POSITIVE_INFINITY : Number(match[2]) };
}
