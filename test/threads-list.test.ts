/**
 * `GET /v1/threads` over a real server: the tenant's threads, most recently updated first, in
 * pages joined by an opaque cursor; bad input is a 400 with a code, another tenant's threads
 * are never listed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "./support/harness.js";

type ThreadView = { thread_id: string; updated_at: string; [key: string]: unknown };
type ThreadPage = { threads: ThreadView[]; next_cursor: string | null };

const ids = (threads: readonly ThreadView[]): string[] => threads.map((thread) => thread.thread_id);

/** The listing's order, worked out from the views themselves: updated_at descending, then thread_id descending. */
const listingOrder = (threads: readonly ThreadView[]): string[] =>
  ids(
    [...threads].sort((a, b) =>
      a.updated_at !== b.updated_at ? (a.updated_at < b.updated_at ? 1 : -1) : a.thread_id < b.thread_id ? 1 : a.thread_id > b.thread_id ? -1 : 0,
    ),
  );

/** A cursor-shaped text made by hand: base64url of whatever JSON value. */
const forged = (value: unknown): string => Buffer.from(JSON.stringify(value), "utf8").toString("base64url");

/** A well-formed position whose encoding ends in unused bits: setting one decodes to the same bytes. */
const canonical = forged([1, "thr_x"]);
const withTrailingBit = canonical.slice(0, -1) + String.fromCharCode(canonical.charCodeAt(canonical.length - 1) + 1);

describe("GET /v1/threads", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 0, wordCount: 10 } });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  /** Every page of `limit`, following next_cursor; each response is checked on the way. */
  async function walk(limit: number): Promise<ThreadPage[]> {
    const pages: ThreadPage[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? `?limit=${limit}` : `?limit=${limit}&before=${encodeURIComponent(cursor)}`;
      const response = await h.api(`/v1/threads${query}`);
      expect(response.status).toBe(200);
      const page = response.body as ThreadPage;
      expect(page.threads.length).toBeLessThanOrEqual(limit);
      pages.push(page);
      cursor = page.next_cursor;
      expect(pages.length).toBeLessThan(100);
    } while (cursor !== null);
    return pages;
  }

  it("lists nothing before the first thread", async () => {
    const response = await h.api("/v1/threads");
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ threads: [], next_cursor: null });
  });

  it("lists every thread once, most recently updated first, each as GET /v1/threads/{id} shows it", async () => {
    const created: string[] = [];
    for (let index = 0; index < 7; index++) created.push(await h.createThread());

    const response = await h.api("/v1/threads");
    expect(response.status).toBe(200);
    const page = response.body as ThreadPage;

    expect(page.next_cursor).toBeNull();
    expect([...ids(page.threads)].sort()).toEqual([...created].sort());
    expect(ids(page.threads)).toEqual(listingOrder(page.threads));
    for (const thread of page.threads) expect(thread).toEqual((await h.api(`/v1/threads/${thread.thread_id}`)).body);
  });

  it("pages follow next_cursor without duplicates or gaps, and the last page says it is the last", async () => {
    const all = ids(((await h.api("/v1/threads?limit=100")).body as ThreadPage).threads);
    expect(all.length).toBeGreaterThanOrEqual(7);

    for (const limit of [1, 2, 3, all.length, all.length + 1]) {
      const pages = await walk(limit);
      expect(ids(pages.flatMap((page) => page.threads)), `limit ${limit}`).toEqual(all);
      // Only the last page is short, and none is empty: a page that ends the list has next_cursor null.
      for (const page of pages.slice(0, -1)) expect(page.threads).toHaveLength(limit);
      for (const page of pages) expect(page.threads.length).toBeGreaterThan(0);
      expect(pages.at(-1)!.next_cursor).toBeNull();
    }
  });

  it("moves a thread to the front when a run changes it, and drops a deleted one", async () => {
    const before = ids(((await h.api("/v1/threads?limit=100")).body as ThreadPage).threads);
    const oldest = before.at(-1)!;
    const run = await h.startRun(oldest, "Bring this thread to the front");
    expect((await h.events(run.run_id)).at(-1)!.type).toBe("run.completed");

    const afterRun = ((await h.api("/v1/threads?limit=100")).body as ThreadPage).threads;
    expect(ids(afterRun)).toEqual([oldest, ...before.slice(0, -1)]);
    expect(afterRun[0]!.updated_at > afterRun[1]!.updated_at).toBe(true);

    const deleted = before[0]!;
    expect((await h.api(`/v1/threads/${deleted}`, { method: "DELETE" })).status).toBe(200);
    const afterDelete = ids(((await h.api("/v1/threads?limit=100")).body as ThreadPage).threads);
    expect(afterDelete).toEqual(ids(afterRun).filter((id) => id !== deleted));
  });

  it("continues from a cursor whose thread was deleted since", async () => {
    const first = (await h.api("/v1/threads?limit=2")).body as ThreadPage;
    const all = ids(((await h.api("/v1/threads?limit=100")).body as ThreadPage).threads);
    expect((await h.api(`/v1/threads/${first.threads[1]!.thread_id}`, { method: "DELETE" })).status).toBe(200);

    const next = await h.api(`/v1/threads?limit=100&before=${first.next_cursor}`);
    expect(next.status).toBe(200);
    expect(ids((next.body as ThreadPage).threads)).toEqual(all.slice(2));
  });

  it.each([
    ["limit 0", "limit=0"],
    ["limit 101", "limit=101"],
    ["a negative limit", "limit=-1"],
    ["a fractional limit", "limit=1.5"],
    ["a limit that is no number", "limit=abc"],
    ["an empty limit", "limit="],
    ["a zero-padded limit", "limit=007"],
    ["a limit beyond any integer", "limit=99999999999999999999"],
    ["an empty cursor", "before="],
    ["a cursor that is not base64url", "before=not-a-cursor!"],
    ["a NUL cursor", "before=%00"],
    ["a cursor of 5,000 characters", `before=${"A".repeat(5_000)}`],
    // Valid base64url, wrong content.
    ["a cursor that is not JSON", `before=${Buffer.from("hello").toString("base64url")}`],
    ["a cursor of an object", `before=${forged({ updated_at: 1, thread_id: "thr_x" })}`],
    ["a cursor of one element", `before=${forged([1])}`],
    ["a cursor of three elements", `before=${forged([1, "thr_x", "extra"])}`],
    ["a cursor with a time in a string", `before=${forged(["1700000000000", "thr_x"])}`],
    ["a cursor with a fractional time", `before=${forged([1.5, "thr_x"])}`],
    ["a cursor with a negative time", `before=${forged([-1, "thr_x"])}`],
    ["a cursor with a time beyond any integer", `before=${forged([1e300, "thr_x"])}`],
    ["a cursor with an empty id", `before=${forged([1, ""])}`],
    ["a cursor with a NUL in its id", `before=${forged([1, "thr_\u0000"])}`],
    ["a cursor with an id of 101 characters", `before=${forged([1, "x".repeat(101)])}`],
    // Not the canonical encoding: standard base64 with padding, and a set trailing bit.
    ["a padded base64 cursor", `before=${encodeURIComponent(Buffer.from(JSON.stringify([1, "thr_x"])).toString("base64"))}`],
    ["a cursor with a trailing bit set", `before=${withTrailingBit}`],
    ["a cursor whose bytes are not UTF-8", `before=${Buffer.from([0x5b, 0x31, 0x2c, 0x22, 0xff, 0x22, 0x5d]).toString("base64url")}`],
  ])("%s → 400 invalid_request naming the parameter", async (_name, query) => {
    const field = query.slice(0, query.indexOf("="));
    const response = await h.api(`/v1/threads?${query}`);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: "invalid_request", message: expect.stringContaining(field) });
    expect(response.body.issues).toEqual([expect.objectContaining({ path: field })]);
  });

  it("accepts every limit from 1 to 100, and a cursor made by hand in the right shape", async () => {
    for (const limit of [1, 9, 10, 99, 100]) expect((await h.api(`/v1/threads?limit=${limit}`)).status).toBe(200);
    // A cursor is only a position: one after every thread lists nothing, one before all of them lists all.
    expect((await h.api(`/v1/threads?before=${forged([0, "thr_"])}`)).body).toEqual({ threads: [], next_cursor: null });
    const everything = ids(((await h.api("/v1/threads?limit=100")).body as ThreadPage).threads);
    const future = Date.now() + 86_400_000;
    expect(ids(((await h.api(`/v1/threads?limit=100&before=${forged([future, "thr_"])}`)).body as ThreadPage).threads)).toEqual(everything);
  });

  it("is described in the OpenAPI document", async () => {
    const spec = (await h.api("/v1/openapi.json")).body;
    const operation = spec.paths["/v1/threads"].get;
    expect(operation).toBeDefined();
    expect(operation.parameters.map((parameter: { name: string }) => parameter.name).sort()).toEqual(["before", "limit"]);
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(["200", "400", "401"]));
  });
});

describe("GET /v1/threads with tenants", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apiKeys: new Map([
        ["key-a", "tenant-a"],
        ["key-b", "tenant-b"],
      ]),
      demo: { wordsPerSecond: 0, wordCount: 10 },
    });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("requires a valid key", async () => {
    expect((await h.api("/v1/threads")).status).toBe(401);
    const wrong = await h.api("/v1/threads", { key: "nope" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe("unauthorized");
  });

  it("lists only the caller's threads, page after page, whatever cursor it sends", async () => {
    const ours: string[] = [];
    const theirs: string[] = [];
    // Interleaved, so the two tenants' threads share times.
    for (let index = 0; index < 4; index++) {
      ours.push(await h.createThread("key-a"));
      theirs.push(await h.createThread("key-b"));
    }
    theirs.push(await h.createThread("key-b"));

    const a = (await h.api("/v1/threads?limit=100", { key: "key-a" })).body as ThreadPage;
    const b = (await h.api("/v1/threads?limit=100", { key: "key-b" })).body as ThreadPage;
    expect([...ids(a.threads)].sort()).toEqual([...ours].sort());
    expect([...ids(b.threads)].sort()).toEqual([...theirs].sort());

    // Walking tenant B in pages of 2 never reaches tenant A's threads.
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const path: string = cursor === null ? "/v1/threads?limit=2" : `/v1/threads?limit=2&before=${cursor}`;
      const page = (await h.api(path, { key: "key-b" })).body as ThreadPage;
      walked.push(...ids(page.threads));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(walked).toEqual(ids(b.threads));

    // Tenant A's cursor, sent by tenant B, is only a position in B's own list.
    const aCursor = ((await h.api("/v1/threads?limit=1", { key: "key-a" })).body as ThreadPage).next_cursor!;
    const fromForeignCursor = await h.api(`/v1/threads?limit=100&before=${aCursor}`, { key: "key-b" });
    expect(fromForeignCursor.status).toBe(200);
    for (const id of ids((fromForeignCursor.body as ThreadPage).threads)) expect(theirs).toContain(id);
    expect(JSON.stringify(fromForeignCursor.body)).not.toContain(ours[0]!);
  });
});
