/**
 * The operation ledger past its retention (docs/data/lifetimes.md), over HTTP on both stores: a
 * reduced row keeps a hashed key and its outcome only, and a retried consequential action with
 * the same key still returns that outcome and runs nothing (invariant 2).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createId, hashIdempotencyKey, type RunEvent } from "../src/core/index.js";
import { countingEmailTool } from "./support/counting-email-tool.js";
import { startHarness, type Harness, type HarnessStore } from "./support/harness.js";

const MARKER = "zq-retention-marker-7731";
const REQUEST = `Please email ada@example.com that ${MARKER} is ready`;

describe.each<HarnessStore>(["sqlite", "postgres"])("a reduced operation (%s)", (storeKind) => {
  let h: Harness;
  // Counts real sends: a retried or erased action must not send again.
  const email = countingEmailTool();

  beforeAll(async () => {
    h = await startHarness({ storeKind, demo: { wordsPerSecond: 0, wordCount: 10 }, tools: [email.tool] });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  const runToEnd = async (threadId: string): Promise<RunEvent[]> => h.events((await h.startRun(threadId, REQUEST)).run_id);

  it("keeps a hashed key and the outcome only, and a retry returns that outcome without a second send", async () => {
    const threadId = await h.createThread();
    const first = await runToEnd(threadId);
    expect(first.at(-1)!.type).toBe("run.completed");
    expect(email.sends()).toBe(1);
    const [committed] = (await h.api(`/v1/threads/${threadId}/operations`)).body.operations;
    expect(committed).toMatchObject({ phase: "committed", reduced_at: null, result: { sent_to: "ada@example.com" } });
    const key = committed.idempotency_key as string;

    const now = Date.now();
    const store = h.tidemark.store;
    expect(await store.countExpired("operations", now + 1)).toBe(1);
    expect(await store.pruneExpired({ layer: "operations", before: now + 1, limit: 10, createCheckpointId: () => createId("cp"), now })).toBe(1);
    expect(await store.countExpired("operations", now + 1)).toBe(0);

    const [reduced] = (await h.api(`/v1/threads/${threadId}/operations`)).body.operations;
    expect(reduced).toMatchObject({
      op_id: committed.op_id,
      phase: "committed",
      commit_attempts: 1,
      idempotency_key: hashIdempotencyKey(key),
      input: "",
      preview: null,
      result: null,
      error: null,
      result_kind: "object",
    });
    expect(reduced.reduced_at).toEqual(expect.any(String));
    expect(JSON.stringify(reduced)).not.toContain(MARKER);

    // The same business action again, on a new thread: the ledger still knows it was done.
    const retryThread = await h.createThread();
    const retry = await runToEnd(retryThread);
    expect(retry.at(-1)!.type).toBe("run.completed");
    expect(retry.find((event) => event.type === "tool.result")).toMatchObject({ reused: true, is_error: false });
    expect(retry.map((event) => event.type)).not.toContain("tool.prepared");
    expect(email.sends()).toBe(1);
    const toolMessage = (await h.api(`/v1/threads/${retryThread}/history`)).body.messages.find((message: any) => message.role === "tool");
    expect(toolMessage.content).toMatch(/already done for this action \(committed\)/);
    // Still one row for the key, still reduced.
    expect((await h.api(`/v1/threads/${retryThread}/operations`)).body.operations).toEqual([]);
    const [still] = (await h.api(`/v1/threads/${threadId}/operations`)).body.operations;
    expect(still).toMatchObject({ op_id: committed.op_id, idempotency_key: hashIdempotencyKey(key), commit_attempts: 1 });
  });
});
