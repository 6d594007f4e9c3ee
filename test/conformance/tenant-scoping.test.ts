/**
 * The store contract for tenants, on every adapter: every method is scoped by tenant, and one
 * tenant's ids and keys never collide with another's.
 */
import { describe, expect, it } from "vitest";
import { createId } from "../../src/core/index.js";
import { adapters } from "./adapters.js";
import { expectKind, OTHER_TENANT, StoreFixture, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick, newThread, runInput, runningRun, publishInput, cancel, snapshot } = fx;

describe.each(adapters)("tenant scoping ($name)", (adapter) => {
  fx.use(adapter);

  it("never shows one tenant's rows to another", async () => {
    const run = await runningRun();
    await store.appendTrace({ tenantId: TENANT, traceId: createId("trc"), runId: run.runId, threadId: run.threadId, kind: "note", data: {}, at: tick() });
    const before = await snapshot(TENANT, run.threadId, run.runId);
    const foreign = { ...run, tenantId: OTHER_TENANT };

    expect(await store.getThread(OTHER_TENANT, run.threadId)).toBeUndefined();
    expect(await store.listMessages(OTHER_TENANT, run.threadId)).toEqual([]);
    expect(await store.listCheckpoints(OTHER_TENANT, run.threadId)).toEqual([]);
    expect(await store.getRun(OTHER_TENANT, run.runId)).toBeUndefined();
    expect(await store.listActiveRuns(OTHER_TENANT, run.threadId)).toEqual([]);
    expect(await store.listTraces(OTHER_TENANT, run.runId)).toEqual([]);
    expect((await store.createRun(runInput(run.threadId, { tenantId: OTHER_TENANT }))).kind).toBe("thread_not_found");
    expect(await store.claimRun({ tenantId: OTHER_TENANT, runId: run.runId, owner: "w", leaseExpiresAt: fx.now, now: tick() })).toBeUndefined();
    expect(await store.transitionRun({ tenantId: OTHER_TENANT, runId: run.runId, from: ["running"], to: "interrupted", now: tick() })).toBeUndefined();
    expect(expectKind(await store.publishMessage(publishInput(foreign)), "rejected").run).toBeUndefined();
    expect((await cancel(foreign)).kind).toBe("not_found");
    expect(await store.finishRun({ tenantId: OTHER_TENANT, runId: run.runId, to: "failed", from: ["running"], stats: {}, now: tick() })).toBeUndefined();
    expect(await fx.deleteThread(OTHER_TENANT, run.threadId)).toBe(false);
    await store.saveTitle(OTHER_TENANT, run.threadId, "stolen", tick());

    expect(await snapshot(TENANT, run.threadId, run.runId)).toEqual(before);
  });

  it("keeps the same thread id, run id and idempotency key in two tenants independent", async () => {
    const threadId = createId("thr");
    const runId = createId("run");
    await newThread(TENANT, threadId);
    await newThread(OTHER_TENANT, threadId);
    const shared = { threadId, runId, idempotencyKey: "same-key" };

    const ours = expectKind(await store.createRun(runInput(threadId, { ...shared, tenantId: TENANT })), "created");
    const theirs = expectKind(
      await store.createRun(runInput(threadId, { ...shared, tenantId: OTHER_TENANT, requestHash: "hash-other" })),
      "created",
    );
    expectKind(await cancel(ours.run), "accepted");

    expect((await store.getRun(TENANT, runId))?.status).toBe("cancelled");
    expect((await store.getRun(OTHER_TENANT, runId))?.status).toBe("queued");
    expect((await store.findRunByIdempotencyKey(OTHER_TENANT, "same-key"))?.requestHash).toBe("hash-other");
    expect((await store.getThread(TENANT, threadId))?.stateVersion).toBe(3);
    expect((await store.getThread(OTHER_TENANT, threadId))?.stateVersion).toBe(2);
    expect((await store.listMessages(OTHER_TENANT, threadId)).map((message) => message.messageId)).toEqual([theirs.message!.messageId]);
  });
});
