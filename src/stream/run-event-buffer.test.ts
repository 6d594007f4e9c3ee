/** A run's event log for reconnecting clients: gapless seq, replay by cursor, one terminal event. */
import { describe, expect, it, vi } from "vitest";
import type { RunEvent, RunEventDraft } from "../core/index.js";
import { RunEventBuffer } from "./run-event-buffer.js";
import { formatSseFrame } from "./sse-frame.js";

const RUN_ID = "run_test";

function delta(text: string): RunEventDraft {
  return { type: "message.delta", run_id: RUN_ID, message_id: "msg_1", text };
}

const completed: RunEventDraft = { type: "run.completed", run_id: RUN_ID, state_version: 3, published_message_id: "msg_1" };

/** A buffer holding `count` deltas `d1`, `d2`, … */
function bufferWith(count: number, firstSeq = 1): RunEventBuffer {
  const buffer = new RunEventBuffer(RUN_ID, firstSeq);
  for (let index = 1; index <= count; index++) buffer.append(delta(`d${index}`));
  return buffer;
}

describe("RunEventBuffer seq", () => {
  it("starts empty just before firstSeq", () => {
    const buffer = new RunEventBuffer(RUN_ID, 101);

    expect(buffer.isEmpty).toBe(true);
    expect(buffer.lastSeq).toBe(100);
    expect(buffer.framesAfter(0)).toEqual({ text: "", lastSeq: 100, count: 0 });
  });

  it("stamps gapless seqs from firstSeq, 1 by default", () => {
    const defaults = new RunEventBuffer(RUN_ID);
    expect(defaults.append(delta("a")).seq).toBe(1);

    const buffer = new RunEventBuffer(RUN_ID, 1_000_000_001);
    const seqs = ["a", "b", "c", "d"].map((text) => buffer.append(delta(text)).seq);

    expect(seqs).toEqual([1_000_000_001, 1_000_000_002, 1_000_000_003, 1_000_000_004]);
    expect(buffer.lastSeq).toBe(1_000_000_004);
    expect(buffer.isEmpty).toBe(false);
  });

  it("returns the stamped event with the draft's fields", () => {
    const buffer = new RunEventBuffer(RUN_ID);

    expect(buffer.append(delta("hello"))).toEqual({ ...delta("hello"), seq: 1 });
    expect(buffer.typeAt(1)).toBe("message.delta");
    expect(buffer.typeAt(2)).toBeUndefined();
  });
});

describe("RunEventBuffer.framesAfter", () => {
  it("replays everything after a cursor as the exact frames", () => {
    const buffer = bufferWith(5);
    const expected = buffer.eventsBetween(2, 5).map(formatSseFrame).join("");

    expect(buffer.framesAfter(2)).toEqual({ text: expected, lastSeq: 5, count: 3 });
    expect(buffer.framesAfter(2).text.startsWith("id: 3\nevent: message.delta\n")).toBe(true);
  });

  it("honours the limit and reports the last seq it returned", () => {
    const buffer = bufferWith(10);

    const first = buffer.framesAfter(0, 4);
    const second = buffer.framesAfter(first.lastSeq, 4);
    const third = buffer.framesAfter(second.lastSeq, 4);

    expect([first.lastSeq, first.count]).toEqual([4, 4]);
    expect([second.lastSeq, second.count]).toEqual([8, 4]);
    expect([third.lastSeq, third.count]).toEqual([10, 2]);
    expect(first.text + second.text + third.text).toBe(buffer.framesAfter(0).text);
  });

  it("returns nothing and keeps the cursor when the client is up to date or ahead", () => {
    const buffer = bufferWith(3);

    expect(buffer.framesAfter(3)).toEqual({ text: "", lastSeq: 3, count: 0 });
    expect(buffer.framesAfter(50)).toEqual({ text: "", lastSeq: 50, count: 0 });
    expect(buffer.framesAfter(0, 0)).toEqual({ text: "", lastSeq: 0, count: 0 });
  });

  it("replays from the start for a cursor before firstSeq", () => {
    const buffer = bufferWith(3, 1001);

    const all = buffer.framesAfter(0);
    expect(all.count).toBe(3);
    expect(all.lastSeq).toBe(1003);
    expect(all.text.startsWith("id: 1001\n")).toBe(true);
    expect(buffer.framesAfter(-5)).toEqual(all);
  });
});

describe("RunEventBuffer.eventsBetween", () => {
  it("parses frames back into the events that were appended", () => {
    const buffer = new RunEventBuffer(RUN_ID);
    const appended: RunEvent[] = [
      buffer.append({ type: "run.started", run_id: RUN_ID, thread_id: "thr_1", attempt: 1, status: "running" }),
      buffer.append(delta("line\nwith \"quotes\" and \\ slashes")),
      buffer.append(completed),
    ];

    expect(buffer.eventsBetween(0, 3)).toEqual(appended);
    expect(buffer.eventsBetween(1, 2)).toEqual([appended[1]]);
    expect(buffer.eventsBetween(0, 99)).toEqual(appended);
    expect(buffer.eventsBetween(3, 3)).toEqual([]);
    expect(buffer.eventsBetween(2, 1)).toEqual([]);
  });
});

describe("RunEventBuffer terminal event", () => {
  it("resolves whenTerminal for waiters before and after the end", async () => {
    const buffer = bufferWith(2);
    const early = buffer.whenTerminal();
    expect(buffer.terminalEvent).toBeUndefined();

    const terminal = buffer.append(completed);

    await expect(early).resolves.toEqual(terminal);
    await expect(buffer.whenTerminal()).resolves.toEqual(terminal);
    expect(buffer.terminalEvent).toEqual(terminal);
    expect(terminal.seq).toBe(3);
  });

  it.each([
    { type: "run.completed", run_id: RUN_ID, state_version: 2, published_message_id: null },
    { type: "run.failed", run_id: RUN_ID, reason: "error", message: "boom" },
    {
      type: "run.cancelled",
      run_id: RUN_ID,
      reason: "user",
      resume_checkpoint_id: "cp_1",
      discarded_stream_chars: 7,
      external_effects: [],
    },
  ] satisfies RunEventDraft[])("refuses any append after $type", (draft) => {
    const buffer = bufferWith(1);
    buffer.append(draft);

    expect(() => buffer.append(delta("late"))).toThrow(/already ended/);
    expect(() => buffer.append(completed)).toThrow(/already ended/);
    expect(buffer.lastSeq).toBe(2);
  });

  it("does not treat non-terminal events as the end", () => {
    const buffer = new RunEventBuffer(RUN_ID);
    buffer.append({ type: "run.cancel_requested", run_id: RUN_ID, reason: "user", accepted_state_version: 3, resume_checkpoint_id: "cp_1" });
    buffer.append({ type: "run.cancelling", run_id: RUN_ID, active_operation: "send_email" });

    expect(buffer.terminalEvent).toBeUndefined();
    expect(() => buffer.append(delta("still fine"))).not.toThrow();
  });
});

describe("RunEventBuffer subscribers", () => {
  it("calls each subscriber once per append until it unsubscribes", () => {
    const buffer = new RunEventBuffer(RUN_ID);
    const first = vi.fn();
    const second = vi.fn();
    const unsubscribeFirst = buffer.subscribe(first);
    buffer.subscribe(second);
    expect(buffer.subscriberCount).toBe(2);

    buffer.append(delta("a"));
    buffer.append(delta("b"));
    unsubscribeFirst();
    buffer.append(delta("c"));

    expect(first).toHaveBeenCalledTimes(2);
    expect(second).toHaveBeenCalledTimes(3);
    expect(buffer.subscriberCount).toBe(1);
  });

  it("lets a subscriber read the event that woke it", () => {
    const buffer = new RunEventBuffer(RUN_ID);
    const seen: number[] = [];
    buffer.subscribe(() => seen.push(buffer.lastSeq));

    buffer.append(delta("a"));
    buffer.append(completed);

    expect(seen).toEqual([1, 2]);
  });
});

describe("RunEventBuffer keeps deltas compactly", () => {
  it("replays a delta with exactly the bytes of the event as appended", () => {
    const buffer = new RunEventBuffer("run_compact");
    const appended = [
      buffer.append({ type: "run.started", run_id: "run_compact", thread_id: "thr_x", attempt: 1, status: "running" }),
      buffer.append({ type: "message.delta", run_id: "run_compact", message_id: "msg_a", text: 'quote " and \n newline' }),
      buffer.append({ type: "message.delta", run_id: "run_compact", message_id: "msg_a", text: " ünïcødé 🌊" }),
    ];
    expect(buffer.framesAfter(0).text).toBe(appended.map(formatSseFrame).join(""));
    expect(buffer.typeAt(2)).toBe("message.delta");
    expect(buffer.typeAt(1)).toBe("run.started");
  });
});

describe("RunEventBuffer after the terminal event", () => {
  /** A run's events as a run appends them: a start, deltas of two messages, a completion, the end. */
  function endedBuffer(): { buffer: RunEventBuffer; appended: RunEvent[] } {
    const buffer = new RunEventBuffer(RUN_ID, 1001);
    const appended = [
      buffer.append({ type: "run.started", run_id: RUN_ID, thread_id: "thr_1", attempt: 1, status: "running" }),
      ...["Hello", " there", ' "quoted"\n', " 🌊"].map((text) => buffer.append(delta(text))),
      buffer.append({ type: "message.delta", run_id: RUN_ID, message_id: "msg_2", text: "next message" }),
    ];
    return { buffer, appended };
  }

  it("serves the same frames, events and types as before the end", () => {
    const { buffer, appended } = endedBuffer();
    const framesBefore = buffer.framesAfter(1000);
    const lateJoinerBefore = buffer.framesAfter(1003, 2);

    const terminal = buffer.append(completed);

    const all = [...appended, terminal];
    expect(buffer.framesAfter(1000)).toEqual({ text: framesBefore.text + formatSseFrame(terminal), lastSeq: 1007, count: 7 });
    expect(buffer.framesAfter(1003, 2)).toEqual(lateJoinerBefore);
    expect(buffer.eventsBetween(1000, 1007)).toEqual(all);
    expect(buffer.eventsBetween(1002, 1004)).toEqual(all.slice(2, 4));
    expect(all.map((event) => buffer.typeAt(event.seq))).toEqual(all.map((event) => event.type));
    expect(buffer.typeAt(1008)).toBeUndefined();
    expect([buffer.lastSeq, buffer.isEmpty, buffer.terminalEvent]).toEqual([1007, false, terminal]);
  });

  it("wakes its subscribers for the terminal event, then holds none", () => {
    const { buffer } = endedBuffer();
    const woken: number[] = [];
    buffer.subscribe(() => woken.push(buffer.lastSeq));
    buffer.subscribe(() => woken.push(buffer.lastSeq));

    buffer.append(completed);

    expect(woken).toEqual([1007, 1007]);
    expect(buffer.subscriberCount).toBe(0);
  });

  it("still lets a subscriber unsubscribe, and take and drop a subscription after the end", () => {
    const { buffer } = endedBuffer();
    const unsubscribe = buffer.subscribe(() => {});
    buffer.append(completed);

    unsubscribe();
    const late = buffer.subscribe(() => {});
    expect(buffer.subscriberCount).toBe(1);
    late();
    expect(buffer.subscriberCount).toBe(0);
  });
});

describe("RunEventBuffer packs long streams as they go", () => {
  it.each([255, 256, 257, 600, 1024])("serves %i deltas and the end exactly as appended", (count) => {
    const buffer = new RunEventBuffer(RUN_ID, 11);
    const appended = [buffer.append({ type: "run.started", run_id: RUN_ID, thread_id: "thr_1", attempt: 1, status: "running" })];
    for (let index = 1; index < count; index++) {
      const messageId = index < count / 2 ? "msg_1" : "msg_2";
      appended.push(buffer.append({ type: "message.delta", run_id: RUN_ID, message_id: messageId, text: ` w${index}` }));
    }
    const frames = (events: RunEvent[]) => events.map(formatSseFrame).join("");

    expect(buffer.framesAfter(10).text).toBe(frames(appended));
    expect(buffer.framesAfter(10 + 200, 100)).toEqual({ text: frames(appended.slice(200, 300)), lastSeq: Math.min(10 + 300, 10 + count), count: Math.min(100, count - 200) });
    appended.push(buffer.append(completed));

    expect(buffer.lastSeq).toBe(10 + count + 1);
    expect(buffer.framesAfter(10).text).toBe(frames(appended));
    expect(buffer.eventsBetween(10 + 250, 10 + 260)).toEqual(appended.slice(250, 260));
    expect(buffer.typeAt(10 + count + 1)).toBe("run.completed");
    expect(buffer.typeAt(10 + count + 2)).toBeUndefined();
  });
});
