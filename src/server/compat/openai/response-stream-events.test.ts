/** The translation of a run's events into OpenAI stream events, as a table of cases, and the frame bytes. */
import { describe, expect, it } from "vitest";
import type { RunEvent, RunEventDraft } from "../../../core/index.js";
import { toResponseStreamEvents, type ResponseSnapshots } from "./response-stream-events.js";
import { formatResponseStreamFrame } from "./response-stream-writer.js";
import type { ResponseView } from "./response-view.js";

const RUN = "run_01jd8x0f1ae2rbv7c9ks0d8m5q";
const started: RunEventDraft = { type: "run.started", run_id: RUN, thread_id: "thr_1", attempt: 1, status: "running" };
const delta = (text: string, messageId = "msg_a"): RunEventDraft => ({ type: "message.delta", run_id: RUN, message_id: messageId, text });
const published = (messageId = "msg_a", role: "assistant" | "user" = "assistant"): RunEventDraft => ({
  type: "message.published",
  run_id: RUN,
  message_id: messageId,
  state_version: 3,
  checkpoint_id: "cp_1",
  role,
});
const cancelRequested: RunEventDraft = { type: "run.cancel_requested", run_id: RUN, reason: "user", accepted_state_version: 3, resume_checkpoint_id: "cp_1" };
const cancelled: RunEventDraft = { type: "run.cancelled", run_id: RUN, reason: "user", resume_checkpoint_id: "cp_1", discarded_stream_chars: 2, external_effects: [] };
const completed: RunEventDraft = { type: "run.completed", run_id: RUN, state_version: 4, published_message_id: "msg_a" };

async function translate(drafts: RunEventDraft[]): Promise<{ type: string; sequence_number: number; [field: string]: unknown }[]> {
  async function* events(): AsyncGenerator<RunEvent> {
    for (const [index, draft] of drafts.entries()) yield { ...draft, seq: index + 1 } as RunEvent;
  }
  const snapshots: ResponseSnapshots = {
    initial: (status) => ({ status }) as unknown as ResponseView,
    final: () => Promise.resolve({ status: "final" } as unknown as ResponseView),
  };
  const out = [];
  for await (const event of toResponseStreamEvents(events(), snapshots)) out.push(event);
  return out;
}

describe("toResponseStreamEvents", () => {
  const cases: [string, RunEventDraft[], string[]][] = [
    [
      "a completed answer: the scaffolding around its deltas, in order",
      [started, delta("Hi"), delta("!"), published(), completed],
      [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
      ],
    ],
    [
      "a Stop: no delta after it was accepted, no done events, response.incomplete last",
      [started, delta("Hi"), cancelRequested, delta("late"), cancelled],
      ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.incomplete"],
    ],
    [
      "the user's input and a second start of a recovered run add nothing",
      [started, published("msg_u", "user"), started, completed],
      ["response.created", "response.in_progress", "response.completed"],
    ],
  ];
  it.each(cases)("%s", async (_, drafts, types) => {
    const events = await translate(drafts);
    expect(events.map((event) => event.type)).toEqual(types);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
  });

  it("gives each message its own output index and the done events its whole text", async () => {
    const events = await translate([started, delta("a", "msg_1"), delta("b", "msg_2"), delta("c", "msg_1"), published("msg_1"), published("msg_2"), completed]);
    const done = events.filter((event) => event.type === "response.output_text.done");
    expect(done.map((event) => [event.item_id, event.output_index, event.text])).toEqual([
      ["msg_1", 0, "ac"],
      ["msg_2", 1, "b"],
    ]);
    expect(events.at(-1)).toEqual({ type: "response.completed", sequence_number: events.length - 1, response: { status: "final" } });
  });
});

describe("formatResponseStreamFrame", () => {
  it("writes the event name and one data line, then a blank line", () => {
    expect(formatResponseStreamFrame({ type: "response.output_text.delta", sequence_number: 4, delta: "a\nb" })).toBe(
      'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":4,"delta":"a\\nb"}\n\n',
    );
  });
});
