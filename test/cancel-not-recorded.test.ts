import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { CANCEL_NOT_RECORDED_MESSAGE } from "../src/runtime/execute-run.js";
import { createDemoModel, createRuntime } from "../src/runtime/index.js";
import type { Store } from "../src/store/index.js";
import { createSqliteStore } from "../src/store/sqlite/index.js";

describe("a Stop whose cancel the store cannot record", () => {
  it("ends the run failed, never cancelled, and publishes nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tidemark-unrecorded-"));
    const sqlite = createSqliteStore({ path: join(dir, "store.db") });
    // The real store, except that recording a cancel fails (e.g. the disk is full).
    const store: Store = new Proxy(sqlite, {
      get(target, property, receiver) {
        if (property === "requestCancel") return async () => Promise.reject(new Error("disk I/O error"));
        const value = Reflect.get(target, property, receiver) as unknown;
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
    const logged: Record<string, unknown>[] = [];
    const logger = { info: () => {}, warn: () => {}, error: (data: Record<string, unknown>, message: string) => logged.push({ ...data, message }) };
    const runtime = createRuntime({ store, logger, model: createDemoModel({ wordsPerSecond: 200, wordCount: 400 }) });
    try {
      const thread = await runtime.createThread("t");
      const { run } = await runtime.startRun({ tenantId: "t", threadId: thread.threadId, input: { role: "user", content: "hi" } });
      const buffer = runtime.hub.get("t", run.runId)!;
      await new Promise<void>((resolve) => {
        const unsubscribe = buffer.subscribe(() => {
          if (buffer.typeAt(buffer.lastSeq) === "message.delta") {
            unsubscribe();
            resolve();
          }
        });
      });
      await expect(runtime.cancelRun("t", run.runId, "user")).rejects.toThrow("disk I/O error");
      const terminal = (await buffer.whenTerminal()) as RunEvent;
      // Not silently: the run says the Stop stopped it but could not be recorded, and the server logged it.
      expect(terminal).toMatchObject({ type: "run.failed", reason: "error", message: CANCEL_NOT_RECORDED_MESSAGE });
      expect(logged).toEqual([expect.objectContaining({ message: "a Stop could not be recorded; the run ends as failed", run_id: run.runId })]);
      const final = await sqlite.getRun("t", run.runId);
      expect(final).toMatchObject({ status: "failed", cancelRequestedAt: null, publishedMessageId: null });
      const messages = await sqlite.listMessages("t", thread.threadId);
      expect(messages.map((message) => message.role)).toEqual(["user"]);
    } finally {
      await runtime.close();
      await sqlite.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
