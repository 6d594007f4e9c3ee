/**
 * A publication that commits just before a Stop, but whose answer from the store comes back after
 * the Stop's (found by the history checker on PostgreSQL: the database released the rows at the
 * publication's commit, the cancel's transaction ran and answered, and the publication's answer
 * was still on its way). The store's order is right (the message at v, the cancel at v + 1); the
 * stream must follow it: `message.published` before `run.cancel_requested`, never after it.
 *
 * Replayed exactly with a gate on the real store: the publication's write commits, and its answer
 * is held until the Stop was recorded.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { checkStore, formatCheckReport } from "../src/check/index.js";
import type { RunEvent } from "../src/core/index.js";
import { createDemoModel, createRuntime, type Logger } from "../src/runtime/index.js";
import type { PublishMessageInput, Store } from "../src/store/index.js";
import { createTestPostgresStore } from "../src/testing/postgres-test-database.js";
import { createDemoOutbox, createDemoTools } from "../src/tools/index.js";

const TENANT = "local";

function deferred() {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((settle) => (resolve = settle));
  return { promise, resolve };
}

describe("a publication committed before a Stop, answered after it (PostgreSQL)", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("its events come before the cancel's on the stream, and nothing of the run follows the cancel", async () => {
    const publicationCommitted = deferred();
    const answerPublication = deferred();
    const cancelRecorded = deferred();
    const store = await createTestPostgresStore();
    cleanups.push(() => store.close());
    // The real store, except that the answer's publication, once committed, is answered only when the test says.
    const gated: Store = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver) as unknown;
        if (typeof value !== "function") return value;
        const real = (value as (...args: unknown[]) => Promise<unknown>).bind(target);
        if (property === "publishMessage") {
          return async (input: PublishMessageInput, ...rest: unknown[]) => {
            const result = await real(input, ...rest);
            if (input.role === "assistant") {
              publicationCommitted.resolve();
              await answerPublication.promise;
            }
            return result;
          };
        }
        if (property === "requestCancel") {
          return async (...args: unknown[]) => {
            const result = await real(...args);
            cancelRecorded.resolve();
            return result;
          };
        }
        return real;
      },
    });
    const loggedErrors: string[] = [];
    const logger: Logger = { info: () => {}, warn: () => {}, error: (data, message) => loggedErrors.push(`${message}: ${JSON.stringify(data)}`) };
    const dir = mkdtempSync(join(tmpdir(), "tidemark-publish-stop-"));
    const outbox = createDemoOutbox(join(dir, "outbox.db"));
    cleanups.push(async () => {
      outbox.close();
      rmSync(dir, { recursive: true, force: true });
    });
    // The demo model answers an email request with a tool call: its message is published, and the run goes on (to the approval).
    const runtime = createRuntime({ store: gated, model: createDemoModel({ wordsPerSecond: 0 }), tools: createDemoTools({ outbox, searchDelayMs: 0 }), logger });
    await runtime.start();
    cleanups.push(async () => {
      answerPublication.resolve();
      await runtime.close();
    });
    const thread = await runtime.createThread(TENANT, { title: "publication and Stop" });
    const { run } = await runtime.startRun({ tenantId: TENANT, threadId: thread.threadId, input: { role: "user", content: "Please email ada@example.com about quote 17" } });
    const buffer = runtime.hub.get(TENANT, run.runId)!;
    await publicationCommitted.promise;
    // The answer is in the store; the Stop lands before the executor hears so.
    const stopping = runtime.cancelRun(TENANT, run.runId, "user_requested");
    await cancelRecorded.promise;
    // The cancel path goes on without I/O to its announcement (or to waiting for the publication):
    // one turn of the event loop, and only then does the publication's answer come back.
    await new Promise(setImmediate);
    answerPublication.resolve();
    const stop = await stopping;
    expect(stop.kind).toBe("accepted");
    await buffer.whenTerminal();

    const events: RunEvent[] = buffer.eventsBetween(0, buffer.lastSeq);
    const types = events.map((event) => event.type);
    const published = events.find((event) => event.type === "message.published");
    const cancel = events.find((event) => event.type === "run.cancel_requested");
    expect(published, types.join(", ")).toBeDefined();
    expect(cancel, types.join(", ")).toBeDefined();
    // The store's order: the publication's version, then the cancel's.
    expect(cancel!.type === "run.cancel_requested" && published!.type === "message.published" && cancel!.accepted_state_version).toBe(
      published!.type === "message.published" && published!.state_version + 1,
    );
    expect(published!.seq, types.join(", ")).toBeLessThan(cancel!.seq);
    const afterCancel = types.slice(types.indexOf("run.cancel_requested"));
    expect(afterCancel.filter((type) => type === "message.delta" || type === "message.published" || type === "run.completed"), types.join(", ")).toEqual([]);
    // Every version a client sees along the stream goes up.
    const versions = events.flatMap((event) =>
      event.type === "message.published" || event.type === "checkpoint.saved" ? [event.state_version] : event.type === "run.cancel_requested" ? [event.accepted_state_version] : [],
    );
    expect(versions).toEqual([...versions].sort((a, b) => a - b));
    expect(types.at(-1)).toBe("run.cancelled");
    expect((await store.getRun(TENANT, run.runId))?.status).toBe("cancelled");
    const report = await checkStore(store);
    expect(report.violations, formatCheckReport(report)).toEqual([]);
    expect(loggedErrors).toEqual([]);
  });
});
