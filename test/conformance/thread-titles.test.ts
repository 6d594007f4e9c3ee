/**
 * The store contract for thread titles, on every adapter: a title given at creation or by a
 * rename is the user's, the automatic title never replaces it, and a rename is not a transition.
 */
import { describe, expect, it } from "vitest";
import { createId } from "../../src/core/index.js";
import { adapters } from "./adapters.js";
import { OTHER_TENANT, StoreFixture, T0, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, newThread } = fx;

describe.each(adapters)("thread titles ($name)", (adapter) => {
  fx.use(adapter);

  it("keeps a title given at creation; the automatic title does not replace it", async () => {
    const threadId = createId("thr");
    const created = await store.createThread({ tenantId: TENANT, threadId, checkpointId: createId("cp"), metadata: {}, title: "Tides", now: T0 });
    expect(created.title).toBe("Tides");

    await store.saveTitle(TENANT, threadId, "Automatic", T0 + 1);

    expect((await store.getThread(TENANT, threadId))?.title).toBe("Tides");
  });

  it("renames without moving the version, and the automatic title never overwrites the rename", async () => {
    const thread = await newThread();

    const renamed = await store.renameThread(TENANT, thread.threadId, "Mine", T0 + 5);
    await store.saveTitle(TENANT, thread.threadId, "Automatic", T0 + 6);

    expect(renamed).toMatchObject({ title: "Mine", stateVersion: thread.stateVersion, headCheckpointId: thread.headCheckpointId, updatedAt: T0 + 5 });
    expect(await store.getThread(TENANT, thread.threadId)).toEqual(renamed);
  });

  it("a rename replaces an automatic title", async () => {
    const thread = await newThread();
    await store.saveTitle(TENANT, thread.threadId, "Automatic", T0 + 1);

    await store.renameThread(TENANT, thread.threadId, "Mine", T0 + 2);

    expect((await store.getThread(TENANT, thread.threadId))?.title).toBe("Mine");
  });

  it("renames nothing that is unknown, foreign or deleted", async () => {
    const thread = await newThread();
    const deleted = await newThread();
    await fx.deleteThread(TENANT, deleted.threadId);

    expect(await store.renameThread(TENANT, "thr_unknown", "x", T0 + 2)).toBeUndefined();
    expect(await store.renameThread(OTHER_TENANT, thread.threadId, "x", T0 + 2)).toBeUndefined();
    expect(await store.renameThread(TENANT, deleted.threadId, "x", T0 + 2)).toBeUndefined();
    expect((await store.getThread(TENANT, thread.threadId))?.title).toBeNull();
  });
});
