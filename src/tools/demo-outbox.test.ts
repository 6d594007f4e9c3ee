/** The demo outbox: a persisted stand-in for a mail server, where duplicates stay visible. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createDemoOutbox, type DemoOutbox } from "./demo-outbox.js";

const message = { to: "ana@example.com", subject: "Hello", body: "The order shipped." };

describe("createDemoOutbox", () => {
  let directory: string;
  const opened: DemoOutbox[] = [];

  function open(options?: { sendDelayMs?: number }): DemoOutbox {
    const outbox = createDemoOutbox(join(directory, "outbox.db"), options);
    opened.push(outbox);
    return outbox;
  }

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), "tidemark-outbox-"));
  });

  afterEach(() => {
    vi.useRealTimers();
    for (const outbox of opened.splice(0)) outbox.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("stores a send and answers with its message id and time", async () => {
    const outbox = open();
    const before = Date.now();

    const receipt = await outbox.send({ ...message, idempotencyKey: "email:t1:a" });

    expect(receipt.message_id).toBe("out_1");
    expect(receipt.sent_at).toBeGreaterThanOrEqual(before);
    expect(outbox.list()).toEqual([{ seq: 1, idempotencyKey: "email:t1:a", ...message, ...receipt }]);
  });

  it("finds the first send by key, and nothing for an unknown key", async () => {
    const outbox = open();
    await outbox.send({ ...message, idempotencyKey: "k1" });
    const second = await outbox.send({ ...message, subject: "Again", idempotencyKey: "k2" });

    expect(outbox.findByKey("k2")).toMatchObject({ seq: 2, subject: "Again", message_id: second.message_id });
    expect(outbox.findByKey("missing")).toBeUndefined();
  });

  it("keeps a duplicate send under the same key, so a test can count it", async () => {
    const outbox = open();
    await outbox.send({ ...message, idempotencyKey: "k1" });
    await outbox.send({ ...message, idempotencyKey: "k1" });
    await outbox.send({ ...message, idempotencyKey: "k2" });

    expect(outbox.countByKey()).toEqual({ k1: 2, k2: 1 });
    expect(outbox.findByKey("k1")?.message_id).toBe("out_1");
  });

  it("persists across a reopen of the file", async () => {
    const first = open();
    const receipt = await first.send({ ...message, idempotencyKey: "k1" });
    first.close();
    opened.splice(opened.indexOf(first), 1);

    const reopened = open();

    expect(reopened.findByKey("k1")).toMatchObject({ ...message, ...receipt });
    expect((await reopened.send({ ...message, idempotencyKey: "k2" })).message_id).toBe("out_2");
  });

  it("refuses a send whose signal is already aborted", async () => {
    const outbox = open();
    const controller = new AbortController();
    const reason = new Error("stopped");
    controller.abort(reason);

    await expect(outbox.send({ ...message, idempotencyKey: "k1" }, { signal: controller.signal })).rejects.toBe(reason);
    expect(outbox.list()).toEqual([]);
  });

  it("completes a send already handed over, though its signal aborts during the delay", async () => {
    vi.useFakeTimers();
    const outbox = open({ sendDelayMs: 5_000 });
    const controller = new AbortController();
    let isSettled = false;

    const sending = outbox.send({ ...message, idempotencyKey: "k1" }, { signal: controller.signal });
    void sending.finally(() => (isSettled = true));
    controller.abort(new Error("user pressed stop"));
    await vi.advanceTimersByTimeAsync(4_999);
    expect(isSettled).toBe(false);
    expect(outbox.findByKey("k1")).toBeUndefined();

    await vi.advanceTimersByTimeAsync(1);

    await expect(sending).resolves.toMatchObject({ message_id: "out_1" });
    expect(outbox.countByKey()).toEqual({ k1: 1 });
  });
});
