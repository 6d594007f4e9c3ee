/**
 * Thread titles over HTTP: a title given at creation or by PATCH is the user's and the automatic
 * title never replaces it; a rename is not a transition; bad titles and foreign ids are refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "./support/harness.js";

describe("thread titles", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 0, wordCount: 10 }, apiKeys: new Map([["key-a", "a"], ["key-b", "b"]]) });
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  it("keeps the title given at creation, trimmed, after the first run's automatic title", async () => {
    const created = await h.api("/v1/threads", { method: "POST", json: { title: "  Tides and moons  ", metadata: { kept: true } }, key: "key-a" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ title: "Tides and moons", metadata: { kept: true } });
    const threadId = created.body.thread_id as string;

    const run = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: { input: { role: "user", content: "Something else entirely" } }, key: "key-a" });
    await h.events(run.body.run_id, { key: "key-a" });

    expect((await h.api(`/v1/threads/${threadId}`, { key: "key-a" })).body.title).toBe("Tides and moons");
  });

  it("renames with PATCH without moving the version", async () => {
    const threadId = (await h.api("/v1/threads", { method: "POST", json: {}, key: "key-a" })).body.thread_id as string;
    const before = (await h.api(`/v1/threads/${threadId}`, { key: "key-a" })).body;

    const renamed = await h.api(`/v1/threads/${threadId}`, { method: "PATCH", json: { title: "My tides" }, key: "key-a" });

    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ thread_id: threadId, title: "My tides", state_version: before.state_version, head_checkpoint_id: before.head_checkpoint_id });
    expect((await h.api(`/v1/threads/${threadId}`, { key: "key-a" })).body.title).toBe("My tides");
  });

  it("refuses an empty, too long or control-character title with 400 invalid_request", async () => {
    const threadId = (await h.api("/v1/threads", { method: "POST", json: {}, key: "key-a" })).body.thread_id as string;
    for (const title of ["", "   ", "x".repeat(201), "a\nb", "a\u0000b", 7, null]) {
      const patched = await h.api(`/v1/threads/${threadId}`, { method: "PATCH", json: { title }, key: "key-a" });
      expect(patched.status, JSON.stringify(title)).toBe(400);
      expect(patched.body.error).toBe("invalid_request");
      const created = await h.api("/v1/threads", { method: "POST", json: { title }, key: "key-a" });
      expect(created.status, JSON.stringify(title)).toBe(400);
    }
    expect((await h.api(`/v1/threads/${threadId}`, { method: "PATCH", json: {}, key: "key-a" })).status).toBe(400);
    expect((await h.api(`/v1/threads/${threadId}`, { method: "PATCH", json: { title: "x", extra: 1 }, key: "key-a" })).status).toBe(400);
    expect((await h.api(`/v1/threads/${threadId}`, { key: "key-a" })).body.title).toBeNull();
  });

  it("answers an unknown, foreign or deleted thread with the same 404", async () => {
    const threadId = (await h.api("/v1/threads", { method: "POST", json: {}, key: "key-a" })).body.thread_id as string;
    const deletedId = (await h.api("/v1/threads", { method: "POST", json: {}, key: "key-a" })).body.thread_id as string;
    await h.api(`/v1/threads/${deletedId}`, { method: "DELETE", key: "key-a" });

    const foreign = await h.api(`/v1/threads/${threadId}`, { method: "PATCH", json: { title: "x" }, key: "key-b" });
    const unknown = await h.api("/v1/threads/thr_01jz0000000000000000000000", { method: "PATCH", json: { title: "x" }, key: "key-b" });
    const deleted = await h.api(`/v1/threads/${deletedId}`, { method: "PATCH", json: { title: "x" }, key: "key-a" });

    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    expect(deleted.status).toBe(404);
    expect(deleted.body.error).toBe("thread_not_found");
    expect((await h.api(`/v1/threads/${threadId}`, { key: "key-a" })).body.title).toBeNull();
  });
});
