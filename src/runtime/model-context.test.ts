import { describe, expect, it } from "vitest";
import type { MessageRecord } from "../core/index.js";
import { buildModelContext, CANCELLED_BEFORE_EXECUTION, findOrphanToolCalls, FRAGMENT_LABEL, OBJECT_FRAGMENT_LABEL } from "./model-context.js";

let position = 0;
function message(overrides: Partial<MessageRecord>): MessageRecord {
  position++;
  return {
    tenantId: "t",
    messageId: `msg_${position}`,
    threadId: "thr",
    position,
    role: "user",
    content: `text ${position}`,
    runId: "run_1",
    stateVersion: position + 1,
    checkpointId: `cp_${position}`,
    publicationStatus: "published",
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    label: null,
    interrupted: false,
    format: "text",
    createdAt: position,
    ...overrides,
  };
}

const call = (id: string, name = "search") => ({ toolCallId: id, toolName: name, input: '{"q":"x"}' });

describe("buildModelContext", () => {
  it("keeps published messages in order, labels saved fragments and leaves out deleted drafts", () => {
    const context = buildModelContext([
      message({ role: "user", content: "hi" }),
      message({ role: "assistant", content: "partial", publicationStatus: "fragment" }),
      message({ role: "assistant", content: "draft", publicationStatus: "deleted" }),
      message({ role: "user", content: "go on" }),
      message({ role: "assistant", content: "hello" }),
    ]);
    expect(context).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: "[saved fragment of a stopped answer] partial" },
      { role: "user", content: "go on" },
      { role: "assistant", content: "hello" },
    ]);
    expect(FRAGMENT_LABEL).toBe("[saved fragment of a stopped answer] ");
  });

  it("never passes a fragment off as a finished answer: no tool calls, always the label", () => {
    const context = buildModelContext([
      message({ role: "user" }),
      message({ role: "assistant", content: "", publicationStatus: "fragment", toolCalls: [call("c1")] }),
    ]);
    expect(context[1]).toEqual({ role: "assistant", content: FRAGMENT_LABEL });
    expect(findOrphanToolCalls(context)).toEqual([]);
  });

  it("labels a fragment of a stopped object as not usable for execution; a published object is plain context", () => {
    const context = buildModelContext([
      message({ role: "user", content: "an order card" }),
      message({ role: "assistant", content: '{"item": "oak', publicationStatus: "fragment", format: "json" }),
      message({ role: "user", content: "again" }),
      message({ role: "assistant", content: '{"item":"oak table"}', format: "json" }),
    ]);
    expect(context[1]).toEqual({ role: "assistant", content: OBJECT_FRAGMENT_LABEL + '{"item": "oak' });
    expect(OBJECT_FRAGMENT_LABEL).toMatch(/^\[saved fragment of an unfinished object.*NOT usable for execution/);
    expect(context[3]).toEqual({ role: "assistant", content: '{"item":"oak table"}' });
  });

  it("passes answered tool calls through with their results", () => {
    const context = buildModelContext([
      message({ role: "user" }),
      message({ role: "assistant", content: "", toolCalls: [call("c1")] }),
      message({ role: "tool", content: "found", toolCallId: "c1", toolName: "search" }),
      message({ role: "assistant", content: "done" }),
    ]);
    expect(context[1]).toEqual({ role: "assistant", content: "", toolCalls: [call("c1")] });
    expect(context[2]).toEqual({ role: "tool", toolCallId: "c1", toolName: "search", content: "found" });
    expect(findOrphanToolCalls(context)).toEqual([]);
  });

  it("adds an explicit result right after a call that history holds no outcome for (a Stop between call and result)", () => {
    const context = buildModelContext([
      message({ role: "user" }),
      message({ role: "assistant", content: "let me look", toolCalls: [call("c1"), call("c2", "email")] }),
      message({ role: "tool", content: "found", toolCallId: "c1", toolName: "search" }),
      message({ role: "user", content: "never mind" }),
    ]);
    expect(context.map((entry) => entry.role)).toEqual(["user", "assistant", "tool", "tool", "user"]);
    expect(context[2]).toEqual({ role: "tool", toolCallId: "c2", toolName: "email", content: CANCELLED_BEFORE_EXECUTION, isError: true });
    expect(findOrphanToolCalls(context)).toEqual([]);
  });

  it("lets the ledger say the outcome is unknown", () => {
    const context = buildModelContext([message({ role: "assistant", content: "", toolCalls: [call("c9", "pay")] })], {
      outcomeFor: (toolCall) => `[outcome unknown] ${toolCall.toolName} was handed to the external system`,
    });
    expect(context[1]).toMatchObject({ role: "tool", toolCallId: "c9", content: expect.stringMatching(/^\[outcome unknown\]/) });
  });

  it("drops a tool result whose call is not in the context", () => {
    const context = buildModelContext([message({ role: "user" }), message({ role: "tool", content: "stray", toolCallId: "nope", toolName: "x" })]);
    expect(context).toEqual([{ role: "user", content: expect.any(String) }]);
  });

  it("findOrphanToolCalls sees a call without a result", () => {
    expect(
      findOrphanToolCalls([
        { role: "user", content: "x" },
        { role: "assistant", content: "", toolCalls: [call("c1")] },
      ]),
    ).toEqual(["c1"]);
  });
});
