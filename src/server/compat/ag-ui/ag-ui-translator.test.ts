import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../../core/index.js";
import { AgUiTranslator } from "./ag-ui-translator.js";

const history = {
  toolCall: async (toolCallId: string) => (toolCallId === "call_1" ? { input: '{"q":"shoes"}', messageId: "msg_a" } : undefined),
  messageContent: async (messageId: string) => (messageId === "msg_t" ? "3 results" : undefined),
};

/** A native event without the fields the translator is given here. */
type Draft = RunEvent extends infer E ? (E extends RunEvent ? Omit<E, "seq" | "run_id"> : never) : never;

/** Translates `events` in order; the AG-UI types and the final translation's flags. */
async function translate(events: Draft[]) {
  const translator = new AgUiTranslator({ threadId: "t", runId: "r", clientState: { mine: 1 }, history });
  const out = [];
  let last;
  for (const [index, event] of events.entries()) {
    last = await translator.translate({ ...event, seq: index + 1, run_id: "run_x" } as RunEvent);
    out.push(...last.events);
  }
  return { out, last: last! };
}

describe("AgUiTranslator", () => {
  it("opens a message on its first delta, ends it when published, and finishes with success", async () => {
    const { out, last } = await translate([
      { type: "message.delta", message_id: "m", text: "Hel" },
      { type: "message.delta", message_id: "m", text: "" },
      { type: "message.delta", message_id: "m", text: "lo" },
      { type: "message.published", message_id: "m", state_version: 3, checkpoint_id: "cp", role: "assistant" },
      { type: "run.completed", state_version: 3, published_message_id: "m" },
    ]);
    expect(out.map((event) => event.type)).toEqual(["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]);
    expect(out.at(-1)).toMatchObject({ threadId: "t", runId: "r", outcome: { type: "success" } });
    expect(last).toEqual(expect.objectContaining({ isFinal: true, isInterrupt: false }));
  });

  it("drops deltas after the cancel was accepted and ends open messages before the cancelled outcome", async () => {
    const { out } = await translate([
      { type: "message.delta", message_id: "m", text: "partial" },
      { type: "run.cancel_requested", reason: "user_requested", accepted_state_version: 2, resume_checkpoint_id: "cp" },
      { type: "message.delta", message_id: "m", text: " late" },
      { type: "run.cancelled", reason: "user_requested", resume_checkpoint_id: "cp", discarded_stream_chars: 7, external_effects: [] },
    ]);
    expect(out.map((event) => event.type)).toEqual(["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]);
    expect(out.at(-1)).toMatchObject({ outcome: { type: "cancelled" }, metadata: { discarded_stream_chars: 7 } });
  });

  it("a tool call: start, its input as args, end; then its published result", async () => {
    const { out } = await translate([
      { type: "tool.started", tool_call_id: "call_1", tool: "search_catalog", effect: "idempotent" },
      { type: "tool.result", tool_call_id: "call_1", tool: "search_catalog", message_id: "msg_t", is_error: false, reused: false },
    ]);
    expect(out).toEqual([
      { type: "TOOL_CALL_START", toolCallId: "call_1", toolCallName: "search_catalog", parentMessageId: "msg_a" },
      { type: "TOOL_CALL_ARGS", toolCallId: "call_1", delta: '{"q":"shoes"}' },
      { type: "TOOL_CALL_END", toolCallId: "call_1" },
      { type: "TOOL_CALL_RESULT", messageId: "msg_t", toolCallId: "call_1", content: "3 results", role: "tool" },
    ]);
  });

  it("an approval wait is the interrupt outcome naming the operation and its tool call", async () => {
    const { out, last } = await translate([
      { type: "tool.prepared", tool_call_id: "call_2", tool: "send_email", op_id: "op_1", idempotency_key: "k", preview: { to: "a" } },
      { type: "run.interrupted", op_id: "op_1", tool: "send_email", idempotency_key: "k", preview: { to: "a" } },
    ]);
    expect(out.at(-1)).toMatchObject({ type: "RUN_FINISHED", outcome: { type: "interrupt", interrupts: [{ id: "op_1", toolCallId: "call_2", reason: "tool_approval" }] } });
    expect(last).toEqual(expect.objectContaining({ isFinal: true, isInterrupt: true }));
  });

  it("a failure is RUN_ERROR with the native reason as its code; steps are a snapshot over the client's state", async () => {
    const { out } = await translate([
      { type: "step.updated", step_id: "s1", status: "in_progress", depends_on: [], title: "Moon", parent_step_id: null, checkpoint_id: null, reused: false },
      { type: "run.failed", reason: "provider_error", message: "The model provider failed." },
    ]);
    expect(out[0]).toEqual({
      type: "STATE_SNAPSHOT",
      snapshot: { mine: 1, tidemark: { run_id: "r", steps: [{ id: "s1", title: "Moon", status: "in_progress", depends_on: [], parent_id: null }] } },
    });
    expect(out[1]).toEqual({ type: "RUN_ERROR", message: "The model provider failed.", code: "provider_error" });
  });
});
