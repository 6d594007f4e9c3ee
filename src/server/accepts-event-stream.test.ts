import { describe, expect, it } from "vitest";
import { acceptsEventStream } from "./accepts-event-stream.js";

describe("acceptsEventStream", () => {
  it("is true when text/event-stream is listed by name, with any case, spaces or parameters", () => {
    expect(acceptsEventStream("text/event-stream")).toBe(true);
    expect(acceptsEventStream("application/json, Text/Event-Stream ;q=0.5")).toBe(true);
    expect(acceptsEventStream("text/event-stream; charset=utf-8")).toBe(true);
  });

  it("is false without it, through a wildcard, or with q=0", () => {
    expect(acceptsEventStream(undefined)).toBe(false);
    expect(acceptsEventStream("")).toBe(false);
    expect(acceptsEventStream("*/*")).toBe(false);
    expect(acceptsEventStream("text/*")).toBe(false);
    expect(acceptsEventStream("application/json")).toBe(false);
    expect(acceptsEventStream("text/event-stream;q=0")).toBe(false);
    expect(acceptsEventStream("text/event-stream; q=0.0, application/json")).toBe(false);
    expect(acceptsEventStream("text/event-streams")).toBe(false);
  });
});
