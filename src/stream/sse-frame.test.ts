/** The SSE wire format, byte for byte (DESIGN §7 "Wire shapes"). */
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../core/index.js";
import { formatDeltaFrame, formatSseComment, formatSseFrame } from "./sse-frame.js";

describe("formatSseFrame", () => {
  it("writes id, event and one data line, then a blank line", () => {
    const event: RunEvent = { type: "run.started", seq: 1, run_id: "run_1", thread_id: "thr_1", attempt: 1, status: "running" };

    expect(formatSseFrame(event)).toBe(
      "id: 1\n" +
        "event: run.started\n" +
        'data: {"type":"run.started","seq":1,"run_id":"run_1","thread_id":"thr_1","attempt":1,"status":"running"}\n' +
        "\n",
    );
  });

  it("keeps text with newlines, carriage returns and unicode on one data line", () => {
    const event: RunEvent = {
      type: "message.delta",
      seq: 42,
      run_id: "run_1",
      message_id: "msg_1",
      text: "line one\nline two\r\n\nid: 99\nevent: run.completed\u2028é",
    };

    const frame = formatSseFrame(event);

    expect(frame).toBe(
      "id: 42\n" +
        "event: message.delta\n" +
        'data: {"type":"message.delta","seq":42,"run_id":"run_1","message_id":"msg_1",' +
        '"text":"line one\\nline two\\r\\n\\nid: 99\\nevent: run.completed\u2028é"}\n' +
        "\n",
    );
    // Exactly three lines and the terminating blank line: no injected SSE fields.
    expect(frame.split("\n")).toHaveLength(5);
    expect(frame.includes("\r")).toBe(false);
    const data = frame.split("\n")[2]!.slice("data: ".length);
    expect(JSON.parse(data)).toEqual(event);
  });

  it("uses the event's seq as the id, whatever its size", () => {
    const event: RunEvent = { type: "run.failed", seq: 1_000_000_001, run_id: "run_2", reason: "worker_lost", message: "lost" };

    expect(formatSseFrame(event).startsWith("id: 1000000001\nevent: run.failed\ndata: {")).toBe(true);
  });
});

describe("formatSseComment", () => {
  it("writes a colon line and a blank line", () => {
    expect(formatSseComment("heartbeat")).toBe(": heartbeat\n\n");
  });

  it("writes an empty comment", () => {
    expect(formatSseComment("")).toBe(": \n\n");
  });
});

describe("formatDeltaFrame", () => {
  it("is byte for byte the frame of the delta event it stands for, whatever the text", () => {
    const texts = ["", "plain", 'quotes " and \\ backslashes', "line one\nline two\r\n\nid: 99\nevent: run.completed", "\u2028\u2029é😀", "\u0000\u001f\u007f", "\ud800 lone surrogate"];
    for (const [index, text] of texts.entries()) {
      const event: RunEvent = { type: "message.delta", run_id: "run_1", message_id: "msg_1", text, seq: index + 1 };
      expect(formatDeltaFrame("run_1", "msg_1", text, index + 1)).toBe(formatSseFrame(event));
    }
  });
});
