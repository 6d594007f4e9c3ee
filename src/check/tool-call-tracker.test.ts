/** The incremental invariant-7 rule agrees with building the model context, for any history and any undo. */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { MessageRecord } from "../core/index.js";
import { buildModelContext, findOrphanToolCalls } from "../runtime/model-context.js";
import { ToolCallTracker, toolEventsOf } from "./tool-call-tracker.js";

const ids = fc.constantFrom("call_1", "call_2", "call_3");
const status = fc.constantFrom<MessageRecord["publicationStatus"]>("published", "published", "fragment", "deleted");

/** A message without its position: an assistant message with tool calls, a tool result, or plain text. */
type Draft =
  | { role: "assistant"; calls: string[]; status: MessageRecord["publicationStatus"] }
  | { role: "tool"; answers: string; status: MessageRecord["publicationStatus"] }
  | { role: "user" | "assistant"; status: MessageRecord["publicationStatus"] };

const draft: fc.Arbitrary<Draft> = fc.oneof(
  fc.record({ role: fc.constant("assistant" as const), calls: fc.array(ids, { maxLength: 3 }), status }),
  fc.record({ role: fc.constant("tool" as const), answers: ids, status }),
  fc.record({ role: fc.constantFrom("user" as const, "assistant" as const), status }),
);

function history(drafts: Draft[]): MessageRecord[] {
  return drafts.map((message, position) => ({
    tenantId: "ten_a",
    messageId: `msg_${position}`,
    threadId: "thr_a",
    position,
    role: message.role,
    content: `m${position}`,
    runId: null,
    stateVersion: position + 2,
    checkpointId: `cp_${position}`,
    publicationStatus: message.status,
    toolCalls: "calls" in message ? message.calls.map((toolCallId: string) => ({ toolCallId, toolName: "search", input: "{}" })) : null,
    toolCallId: "answers" in message ? message.answers : null,
    toolName: "answers" in message ? "search" : null,
    label: null,
    interrupted: false,
    format: "text",
    createdAt: position,
  }));
}

const expected = (messages: MessageRecord[]) => findOrphanToolCalls(buildModelContext(messages));

describe("ToolCallTracker", () => {
  it("finds exactly the calls the model context leaves without an outcome", () => {
    fc.assert(
      fc.property(fc.array(draft, { maxLength: 12 }), (drafts) => {
        const messages = history(drafts);
        const tracker = new ToolCallTracker();
        for (const event of toolEventsOf(messages)) tracker.apply(event);
        expect(tracker.orphanToolCalls()).toEqual(expected(messages));
      }),
      { numRuns: 500 },
    );
  });

  it("agrees again after taking back any suffix and applying another", () => {
    fc.assert(
      fc.property(fc.array(draft, { maxLength: 10 }), fc.array(draft, { maxLength: 6 }), fc.nat(), (drafts, others, cut) => {
        const messages = history(drafts);
        const kept = cut % (messages.length + 1);
        const tracker = new ToolCallTracker();
        const events = toolEventsOf(messages);
        for (const event of events) tracker.apply(event);
        const keptEvents = toolEventsOf(messages.slice(0, kept)).length;
        for (const event of events.slice(keptEvents).reverse()) tracker.undo(event);
        expect(tracker.orphanToolCalls()).toEqual(expected(messages.slice(0, kept)));
        const sibling = history([...drafts.slice(0, kept), ...others]);
        for (const event of toolEventsOf(sibling.slice(kept))) tracker.apply(event);
        expect(tracker.orphanToolCalls()).toEqual(expected(sibling));
      }),
      { numRuns: 500 },
    );
  });

  it("refuses to take back an event that is not the latest of its id", () => {
    const [first, second] = toolEventsOf(history([{ role: "assistant", calls: ["call_1"], status: "published" }, { role: "assistant", calls: ["call_1"], status: "published" }]));
    const tracker = new ToolCallTracker();
    tracker.apply(first!);
    tracker.apply(second!);
    expect(() => tracker.undo(first!)).toThrow(/not the latest/);
  });
});
