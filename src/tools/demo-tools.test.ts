/** The demo tools: a search that stops at once, and an email that commits once per business key. */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createDemoOutbox, type DemoOutbox } from "./demo-outbox.js";
import { createDemoTools, DEMO_TOOL_NAMES, stableHash } from "./demo-tools.js";
import type { Tool, ToolContext } from "./tool.js";

const email = { to: "ana@example.com", subject: "Your order", body: "It shipped today." };

function contextFor(threadId = "thr_1", signal = new AbortController().signal): ToolContext {
  return { tenantId: "ten_1", threadId, runId: "run_1", toolCallId: "call_1", signal };
}

describe("createDemoTools", () => {
  let outbox: DemoOutbox;

  beforeEach(() => {
    outbox = createDemoOutbox(":memory:");
  });

  afterEach(() => {
    vi.useRealTimers();
    outbox.close();
  });

  it("returns the two demo tools with their contracts, usable as a tool list", () => {
    const tools: Tool[] = createDemoTools({ outbox });

    expect(tools.map((tool) => [tool.name, tool.effect])).toEqual([
      [DEMO_TOOL_NAMES.searchCatalog, "idempotent"],
      [DEMO_TOOL_NAMES.sendEmail, "consequential"],
    ]);
    const [search, send] = createDemoTools({ outbox });
    expect(search.honoursSignal).toBe(true);
    expect(send.approval).toBe("required");
  });

  describe("search_catalog", () => {
    it("validates its input", () => {
      const [search] = createDemoTools({ outbox });

      expect(search.input.safeParse({ query: "red shoes" }).success).toBe(true);
      expect(search.input.safeParse({ query: "" }).success).toBe(false);
      expect(search.input.safeParse({ query: "x".repeat(201) }).success).toBe(false);
      expect(search.input.safeParse({ q: "red shoes" }).success).toBe(false);
    });

    it("finds three items derived from the query, the same every time", async () => {
      const [search] = createDemoTools({ outbox, searchDelayMs: 0 });

      const result = await search.execute({ query: "red shoes" }, contextFor());

      expect(result.query).toBe("red shoes");
      expect(result.items).toHaveLength(3);
      expect(result.items.map((item) => item.name)).toEqual(["red shoes Basic", "red shoes Plus", "red shoes Pro"]);
      for (const item of result.items) {
        expect(item.sku).toMatch(/^SKU-[0-9A-F]{6}$/);
        expect(item.price).toBeGreaterThan(0);
        expect(Math.round(item.price * 100)).toBe(item.price * 100);
      }
      await expect(search.execute({ query: "red shoes" }, contextFor())).resolves.toEqual(result);
      expect((await search.execute({ query: "blue hats" }, contextFor())).items).not.toEqual(result.items);
    });

    it("takes its delay, then answers", async () => {
      vi.useFakeTimers();
      const [search] = createDemoTools({ outbox });
      let isSettled = false;

      const searching = search.execute({ query: "lamp" }, contextFor());
      void searching.finally(() => (isSettled = true));
      await vi.advanceTimersByTimeAsync(1_499);
      expect(isSettled).toBe(false);
      await vi.advanceTimersByTimeAsync(1);

      await expect(searching).resolves.toMatchObject({ query: "lamp" });
    });

    it("rejects with the signal's reason as soon as it aborts, leaving no timer", async () => {
      vi.useFakeTimers();
      const [search] = createDemoTools({ outbox, searchDelayMs: 60_000 });
      const controller = new AbortController();
      const reason = new Error("user pressed stop");

      const searching = search.execute({ query: "lamp" }, contextFor("thr_1", controller.signal));
      controller.abort(reason);

      await expect(searching).rejects.toBe(reason);
      expect(vi.getTimerCount()).toBe(0);
    });

    it("refuses to start with an aborted signal", async () => {
      const [search] = createDemoTools({ outbox });
      const controller = new AbortController();
      controller.abort(new Error("already stopped"));

      await expect(search.execute({ query: "lamp" }, contextFor("thr_1", controller.signal))).rejects.toThrow("already stopped");
    });
  });

  describe("send_email", () => {
    it("validates its input", () => {
      const [, send] = createDemoTools({ outbox });

      expect(send.input.safeParse(email).success).toBe(true);
      expect(send.input.safeParse({ ...email, to: "not an address" }).success).toBe(false);
      expect(send.input.safeParse({ ...email, to: "ana@localhost" }).success).toBe(false);
      expect(send.input.safeParse({ ...email, subject: "" }).success).toBe(false);
      expect(send.input.safeParse({ to: email.to, subject: email.subject }).success).toBe(false);
    });

    it("names the business action: the same email on the same thread gets the same key", () => {
      const [, send] = createDemoTools({ outbox });
      const key = send.idempotencyKey(email, contextFor("thr_1"));

      expect(key).toBe(`email:thr_1:${stableHash(email)}`);
      expect(send.idempotencyKey({ body: email.body, subject: email.subject, to: email.to }, { ...contextFor("thr_1"), runId: "run_2", toolCallId: "call_9" })).toBe(key);
      expect(send.idempotencyKey({ ...email, body: "It shipped yesterday." }, contextFor("thr_1"))).not.toBe(key);
      expect(send.idempotencyKey({ ...email, to: "bo@example.com" }, contextFor("thr_1"))).not.toBe(key);
      expect(send.idempotencyKey(email, contextFor("thr_2"))).not.toBe(key);
    });

    it("previews the email with the first 120 characters of its body", async () => {
      const [, send] = createDemoTools({ outbox });
      const body = "0123456789".repeat(20);

      const preview = await send.prepare?.({ ...email, body }, contextFor());

      expect(preview).toEqual({ to: email.to, subject: email.subject, body_preview: body.slice(0, 120) });
      expect(outbox.list()).toEqual([]);
    });

    it("commits into the outbox under its key, and status reports the stored result", async () => {
      const [, send] = createDemoTools({ outbox });
      const context = contextFor();
      const idempotencyKey = send.idempotencyKey(email, context);
      const statusContext = { tenantId: "ten_1", threadId: "thr_1", signal: context.signal };

      await expect(send.status?.(idempotencyKey, statusContext)).resolves.toEqual({ outcome: "not_committed" });
      const receipt = await send.commit(email, { ...context, idempotencyKey });

      expect(receipt).toEqual({ message_id: "out_1", sent_at: expect.any(Number) });
      expect(outbox.findByKey(idempotencyKey)).toMatchObject({ ...email, ...receipt });
      expect(outbox.countByKey()).toEqual({ [idempotencyKey]: 1 });
      await expect(send.status?.(idempotencyKey, statusContext)).resolves.toEqual({ outcome: "committed", result: receipt });
    });
  });
});

describe("stableHash", () => {
  it("does not depend on key order, and tells different values apart", () => {
    expect(stableHash({ a: 1, b: { c: [1, 2], d: "x" } })).toBe(stableHash({ b: { d: "x", c: [1, 2] }, a: 1 }));
    expect(stableHash({ a: 1 })).not.toBe(stableHash({ a: 2 }));
    expect(stableHash({ a: [1, 2] })).not.toBe(stableHash({ a: [2, 1] }));
    expect(stableHash({ a: 1 })).toMatch(/^[0-9a-f]{16}$/);
  });
});
