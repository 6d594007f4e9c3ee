import { EventEmitter } from "node:events";
import type { ServerResponse } from "node:http";
import { describe, expect, it } from "vitest";
import { SseBatchWriter } from "./sse-batch-writer.js";

/** The part of a ServerResponse the writer uses, recording each write. */
class FakeResponse extends EventEmitter {
  readonly writes: string[] = [];
  writableEnded = false;
  destroyed = false;
  writableNeedDrain: boolean;

  constructor(options: { needDrain?: boolean } = {}) {
    super();
    this.writableNeedDrain = options.needDrain ?? false;
  }

  write(text: string): boolean {
    this.writes.push(text);
    return !this.writableNeedDrain;
  }

  end(): void {
    this.writableEnded = true;
  }
}

const fakeResponse = (options: { needDrain?: boolean } = {}) => new FakeResponse(options);

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe("SseBatchWriter", () => {
  it("writes the text of one turn in one write, in order, in the next check phase", async () => {
    const response = fakeResponse();
    const writer = new SseBatchWriter(response as unknown as ServerResponse);
    expect(writer.write("data: 1\n\n")).toBe(true);
    await Promise.resolve();
    writer.write("data: 2\n\n");
    expect(response.writes).toEqual([]);
    await nextTurn();
    expect(response.writes).toEqual(["data: 1\n\ndata: 2\n\n"]);
    writer.write("data: 3\n\n");
    await nextTurn();
    expect(response.writes).toEqual(["data: 1\n\ndata: 2\n\n", "data: 3\n\n"]);
  });

  it("writes what is queued before it ends the response", () => {
    const response = fakeResponse();
    const writer = new SseBatchWriter(response as unknown as ServerResponse);
    writer.write("data: last\n\n");
    writer.end();
    expect(response.writes).toEqual(["data: last\n\n"]);
    expect(response.writableEnded).toBe(true);
  });

  it("writes at once past 64 KiB, and answers false while the socket is full", () => {
    const response = fakeResponse({ needDrain: true });
    const writer = new SseBatchWriter(response as unknown as ServerResponse);
    const big = "x".repeat(64 * 1024);
    expect(writer.write(big)).toBe(false);
    expect(response.writes).toEqual([big]);
  });

  it("drops what is queued once discarded, and never writes to a destroyed response", async () => {
    const response = fakeResponse();
    const writer = new SseBatchWriter(response as unknown as ServerResponse);
    writer.write("data: dropped\n\n");
    writer.discard();
    await nextTurn();
    writer.write("data: late\n\n");
    response.destroyed = true;
    await nextTurn();
    expect(response.writes).toEqual([]);
  });
});
