/**
 * A run's events as OpenAI Responses stream events, with their scaffolding in order and a gapless
 * `sequence_number` from 0: `response.created`, `response.in_progress`, then for each assistant
 * message `response.output_item.added`, `response.content_part.added`, `response.output_text.delta`…,
 * and when it is published `response.output_text.done`, `response.content_part.done`,
 * `response.output_item.done`; last `response.completed`, `response.failed`, or, for a Stop,
 * `response.incomplete` carrying the response with status `cancelled` (the client's stream-event
 * union has no `response.cancelled`, and its accumulator throws on a type it does not know).
 *
 * The translation depends on the run's events only, so a replay numbers every event as the live
 * stream did, and `starting_after` is a plain filter. Deltas after a Stop was accepted are dropped
 * (never published), and the open message gets no `done` events: its partial text was discarded.
 */
import type { RunEvent } from "../../../core/index.js";
import { outputMessageView, outputTextView, type ResponseView } from "./response-view.js";

/** One OpenAI stream event. */
export interface ResponseStreamEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

/** How the translation reads the response object: as it stood before the run started, and once it ended. */
export interface ResponseSnapshots {
  /** The response before any output, with `status`. */
  initial(status: "queued" | "in_progress"): ResponseView;
  /** The response as stored once the run is terminal. */
  final(): Promise<ResponseView>;
}

interface OpenItem {
  outputIndex: number;
  text: string;
}

const TERMINAL_TYPES: Partial<Record<RunEvent["type"], string>> = {
  "run.completed": "response.completed",
  "run.failed": "response.failed",
  "run.cancelled": "response.incomplete",
};

/** Translates `runEvents` (from the run's first event) into OpenAI stream events. */
export async function* toResponseStreamEvents(runEvents: AsyncIterable<RunEvent>, snapshots: ResponseSnapshots): AsyncGenerator<ResponseStreamEvent> {
  let sequence = 0;
  const next = (type: string, fields: Record<string, unknown>): ResponseStreamEvent => ({ type, sequence_number: sequence++, ...fields });
  const items = new Map<string, OpenItem>();
  let isStarted = false;
  let isStopping = false;

  for await (const event of runEvents) {
    const terminalType = TERMINAL_TYPES[event.type];
    if (terminalType) {
      yield next(terminalType, { response: await snapshots.final() });
      return;
    }
    switch (event.type) {
      case "run.started":
        // A recovered run starts again: the response started once.
        if (isStarted) break;
        isStarted = true;
        yield next("response.created", { response: snapshots.initial("queued") });
        yield next("response.in_progress", { response: snapshots.initial("in_progress") });
        break;
      case "run.cancel_requested":
        isStopping = true;
        break;
      case "message.delta": {
        if (isStopping) break;
        let item = items.get(event.message_id);
        if (!item) {
          item = { outputIndex: items.size, text: "" };
          items.set(event.message_id, item);
          const at = { output_index: item.outputIndex };
          yield next("response.output_item.added", { ...at, item: outputMessageView(event.message_id, "", "in_progress") });
          yield next("response.content_part.added", { item_id: event.message_id, ...at, content_index: 0, part: outputTextView("") });
        }
        item.text += event.text;
        yield next("response.output_text.delta", {
          item_id: event.message_id,
          output_index: item.outputIndex,
          content_index: 0,
          delta: event.text,
          logprobs: [],
        });
        break;
      }
      case "message.published": {
        const item = items.get(event.message_id);
        if (event.role !== "assistant" || !item) break;
        const at = { item_id: event.message_id, output_index: item.outputIndex, content_index: 0 };
        yield next("response.output_text.done", { ...at, text: item.text, logprobs: [] });
        yield next("response.content_part.done", { ...at, part: outputTextView(item.text) });
        yield next("response.output_item.done", { output_index: item.outputIndex, item: outputMessageView(event.message_id, item.text, "completed") });
        break;
      }
      default:
        break;
    }
  }
}
