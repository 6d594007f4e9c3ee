/**
 * The store contract for listing a tenant's threads, on every adapter: most recently updated
 * first, keyset pages that continue one another exactly, deleted and foreign threads never listed.
 */
import { describe, expect, it } from "vitest";
import { createId, type ThreadRecord } from "../../src/core/index.js";
import type { ListThreadsOptions } from "../../src/store/store.js";
import { adapters } from "./adapters.js";
import { expectKind, OTHER_TENANT, StoreFixture, T0, TENANT } from "./fixtures.js";

const fx = new StoreFixture();
const { store, tick, newThread, newRun, runningRun, publishInput } = fx;

/** A thread of `tenantId` created at exactly `at`. */
const threadAt = (at: number, threadId = createId("thr"), tenantId = TENANT): Promise<ThreadRecord> =>
  store.createThread({ tenantId, threadId, checkpointId: createId("cp"), metadata: {}, now: at });

const ids = (threads: readonly ThreadRecord[]): string[] => threads.map((thread) => thread.threadId);

/** The position after a page's last thread, as a client hands it back. */
const after = (thread: ThreadRecord): ListThreadsOptions["before"] => ({ updatedAt: thread.updatedAt, threadId: thread.threadId });

/** Every page of `limit` from `before`, each from the previous page's last thread, until one comes back short. */
async function walk(tenantId: string, limit: number, before?: ListThreadsOptions["before"]): Promise<ThreadRecord[][]> {
  const pages: ThreadRecord[][] = [];
  for (;;) {
    const page = await store.listThreads(tenantId, { limit, before });
    expect(page.length).toBeLessThanOrEqual(limit);
    pages.push(page);
    if (page.length < limit) return pages;
    before = after(page.at(-1)!);
    expect(pages.length).toBeLessThan(100);
  }
}

/** Whether `thread` comes after `position` in the listing's order. */
const comesAfter = (thread: ThreadRecord, position: NonNullable<ListThreadsOptions["before"]>): boolean =>
  thread.updatedAt < position.updatedAt || (thread.updatedAt === position.updatedAt && thread.threadId < position.threadId);

describe.each(adapters)("listThreads ($name)", (adapter) => {
  fx.use(adapter);

  it("lists the tenant's threads most recently updated first, ties by the greater thread id", async () => {
    await threadAt(T0 + 1, "thr_a");
    await threadAt(T0 + 3, "thr_b");
    await threadAt(T0 + 3, "thr_c");
    await threadAt(T0 + 2, "thr_d");
    await threadAt(T0 + 3, "thr_e");

    const listed = await store.listThreads(TENANT, { limit: 10 });

    expect(ids(listed)).toEqual(["thr_e", "thr_c", "thr_b", "thr_d", "thr_a"]);
    // Whole records, as getThread reads them.
    for (const thread of listed) expect(thread).toEqual(await store.getThread(TENANT, thread.threadId));
  });

  it("lists nothing for a tenant without threads", async () => {
    await newThread(OTHER_TENANT);
    expect(await store.listThreads(TENANT, { limit: 10 })).toEqual([]);
  });

  it("returns at most `limit` threads, and none for a limit below 1", async () => {
    for (let index = 0; index < 4; index++) await newThread();

    expect(await store.listThreads(TENANT, { limit: 3 })).toHaveLength(3);
    expect(await store.listThreads(TENANT, { limit: 1 })).toHaveLength(1);
    expect(await store.listThreads(TENANT, { limit: 0 })).toEqual([]);
    // SQLite would read a negative LIMIT as no limit at all.
    expect(await store.listThreads(TENANT, { limit: -1 })).toEqual([]);
  });

  it("pages continue one another without duplicates or gaps, ties across page boundaries included", async () => {
    // 13 threads over 4 distinct times: most pages cut through a run of equal times.
    for (let index = 0; index < 13; index++) await threadAt(T0 + (index % 4) * 1_000);
    const all = await store.listThreads(TENANT, { limit: 100 });
    expect(all).toHaveLength(13);
    for (let index = 1; index < all.length; index++) expect(comesAfter(all[index]!, all[index - 1]!)).toBe(true);

    for (const limit of [1, 2, 3, 4, 5, 13, 20]) {
      const pages = await walk(TENANT, limit);
      const walked = pages.flat();
      expect(ids(walked), `limit ${limit}`).toEqual(ids(all));
      expect(new Set(ids(walked)).size).toBe(13);
      // Every page but the last is full; the walk ends on a short (possibly empty) page.
      for (const page of pages.slice(0, -1)) expect(page).toHaveLength(limit);
    }
    expect(await store.listThreads(TENANT, { limit: 5, before: after(all.at(-1)!) })).toEqual([]);
  });

  it("never lists deleted threads, and a page still continues after a thread deleted since", async () => {
    const first = await newThread();
    const second = await newThread();
    // Deleting writes the thread too: `second` now sorts after `third` and before `first`.
    expect(await fx.deleteThread(TENANT, second.threadId)).toBe(true);
    const third = await newThread();
    const fourth = await newThread();
    const fifth = await newThread();

    const page = await store.listThreads(TENANT, { limit: 2 });
    expect(ids(page)).toEqual([fifth.threadId, fourth.threadId]);
    // The page's last thread is deleted before the next page is read: its position still holds.
    expect(await fx.deleteThread(TENANT, fourth.threadId)).toBe(true);

    expect(ids(await store.listThreads(TENANT, { limit: 2, before: after(page[1]!) }))).toEqual([third.threadId, first.threadId]);
    expect(ids(await store.listThreads(TENANT, { limit: 10 }))).toEqual([fifth.threadId, third.threadId, first.threadId]);
  });

  it("never lists another tenant's threads, even with the same ids and times", async () => {
    for (let index = 0; index < 4; index++) {
      const threadId = createId("thr");
      await threadAt(T0 + index, threadId, TENANT);
      await threadAt(T0 + index, threadId, OTHER_TENANT);
      await threadAt(T0 + index, createId("thr"), OTHER_TENANT);
    }

    const ours = await store.listThreads(TENANT, { limit: 100 });
    const theirs = await store.listThreads(OTHER_TENANT, { limit: 100 });

    expect(ours).toHaveLength(4);
    expect(theirs).toHaveLength(8);
    expect(ours.every((thread) => thread.tenantId === TENANT)).toBe(true);
    expect(theirs.every((thread) => thread.tenantId === OTHER_TENANT)).toBe(true);
    // A position taken from the other tenant's listing is only a position: it lists our own threads after it.
    const foreign = after(theirs[2]!)!;
    const page = await store.listThreads(TENANT, { limit: 100, before: foreign });
    expect(page.length).toBeGreaterThan(0);
    expect(ids(page)).toEqual(ids(ours.filter((thread) => comesAfter(thread, foreign))));
  });

  it("moves a thread to the front when it changes: a run, a published message, a title", async () => {
    const a = await newThread();
    const b = await newThread();
    const c = await newThread();
    expect(ids(await store.listThreads(TENANT, { limit: 10 }))).toEqual([c.threadId, b.threadId, a.threadId]);

    const run = await newRun(a.threadId);
    const afterRun = await store.listThreads(TENANT, { limit: 10 });
    expect(ids(afterRun)).toEqual([a.threadId, c.threadId, b.threadId]);
    expect(afterRun[0]).toMatchObject({ activeRunId: run.runId, stateVersion: 2, updatedAt: run.createdAt });

    const running = await runningRun({ threadId: b.threadId });
    // Only the thread's own changes move it: claiming b's run wrote nothing to the thread, publishing does.
    expectKind(await store.publishMessage(publishInput(running)), "published");
    expect(ids(await store.listThreads(TENANT, { limit: 10 }))).toEqual([b.threadId, a.threadId, c.threadId]);

    await store.saveTitle(TENANT, c.threadId, "A title", tick());
    const afterTitle = await store.listThreads(TENANT, { limit: 10 });
    expect(ids(afterTitle)).toEqual([c.threadId, b.threadId, a.threadId]);
    expect(afterTitle[0]).toMatchObject({ title: "A title", updatedAt: fx.now });
  });

  it("lists a thread that changed during a walk once: it moves to a new first page, never to a later one", async () => {
    const threads: ThreadRecord[] = [];
    for (let index = 0; index < 6; index++) threads.push(await newThread());
    const firstPage = await store.listThreads(TENANT, { limit: 2 });
    const seen = firstPage[0]!;
    const unseen = threads[0]!; // the oldest: it would have been on the last page

    await newRun(seen.threadId);
    await newRun(unseen.threadId);
    const rest = (await walk(TENANT, 2, after(firstPage.at(-1)!))).flat();

    expect(ids(rest)).not.toContain(seen.threadId);
    expect(ids(rest)).not.toContain(unseen.threadId);
    expect(new Set([...ids(firstPage), ...ids(rest)]).size).toBe(firstPage.length + rest.length);
    // Both now lead the listing, the latest change first.
    expect(ids(await store.listThreads(TENANT, { limit: 2 }))).toEqual([unseen.threadId, seen.threadId]);
  });

  it("lists a branch as a thread of its own", async () => {
    const source = await newThread();
    const branch = expectKind(
      await store.forkThread({
        tenantId: TENANT,
        sourceThreadId: source.threadId,
        fromCheckpointId: source.headCheckpointId,
        threadId: createId("thr"),
        checkpointId: createId("cp"),
        metadata: {},
        now: tick(),
      }),
      "forked",
    );

    const listed = await store.listThreads(TENANT, { limit: 10 });

    expect(ids(listed)).toEqual([branch.thread.threadId, source.threadId]);
    expect(listed[0]!.forkedFrom).toMatchObject({ threadId: source.threadId, checkpointId: source.headCheckpointId });
  });
});
