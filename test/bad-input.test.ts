import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createId } from "../src/core/index.js";
import { startHarness, type Harness } from "./support/harness.js";

describe("bad input gets a clear JSON error, never a 5xx", () => {
  let h: Harness;
  let threadId: string;
  beforeAll(async () => {
    h = await startHarness({ demo: { wordsPerSecond: 0, wordCount: 20 } });
    threadId = await h.createThread();
  });
  afterAll(async () => {
    await h.expectNoViolations();
    await h.close();
  });

  const raw = (path: string, init: RequestInit) => fetch(`${h.url}${path}`, init);

  it.each([
    ["missing input", { foo: 1 }, "invalid_request"],
    ["empty content", { input: { role: "user", content: "" } }, "invalid_request"],
    ["wrong role", { input: { role: "assistant", content: "x" } }, "invalid_request"],
    ["unknown field", { input: { role: "user", content: "x" }, surprise: true }, "invalid_request"],
    ["negative version", { input: { role: "user", content: "x" }, expected_state_version: -1 }, "invalid_request"],
    ["malformed run_id", { input: { role: "user", content: "x" }, run_id: "run_../../etc" }, "invalid_request"],
    ["unknown multitask", { input: { role: "user", content: "x" }, multitask: "parallel" }, "invalid_request"],
    ["array body", [1, 2, 3], "invalid_request"],
  ])("create run with %s → 400", async (_name, body, code) => {
    const response = await h.api(`/v1/threads/${threadId}/runs`, { method: "POST", json: body });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ error: code, message: expect.any(String) });
  });

  it("malformed JSON → 400 invalid_json", async () => {
    const response = await raw(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"input": {',
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: "invalid_json" });
  });

  it("a body that is not JSON → 415", async () => {
    const response = await raw(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "hello",
    });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({ error: "unsupported_media_type" });
  });

  it("a body over the limit → 413", async () => {
    const response = await h.api(`/v1/threads/${threadId}/runs`, {
      method: "POST",
      json: { input: { role: "user", content: "x".repeat(2 * 1024 * 1024) } },
    });
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ error: "payload_too_large" });
  });

  it("unknown ids and routes → 404 with a code", async () => {
    const unknownThread = createId("thr");
    expect((await h.api(`/v1/threads/${unknownThread}`)).body).toMatchObject({ error: "thread_not_found" });
    expect((await h.api(`/v1/threads/${unknownThread}/history`)).status).toBe(404);
    expect((await h.api(`/v1/threads/${unknownThread}/checkpoints`)).status).toBe(404);
    expect((await h.api(`/v1/threads/not-even-an-id/runs`, { method: "POST", json: { input: { role: "user", content: "x" } } })).status).toBe(404);
    expect((await h.api(`/v1/runs/${createId("run")}`)).body).toMatchObject({ error: "run_not_found" });
    expect((await h.api(`/v1/runs/${createId("run")}/events`)).status).toBe(404);
    expect((await h.api(`/v1/runs/garbage/cancel`, { method: "POST" })).status).toBe(404);
    expect((await h.api(`/v1/nothing-here`)).body).toMatchObject({ error: "not_found" });
  });

  it("bad Last-Event-ID and ?after= → 400; bad ?wait= → 400", async () => {
    const run = await h.startRun(threadId);
    expect((await h.api(`/v1/runs/${run.run_id}/events`, { headers: { "last-event-id": "abc" } })).status).toBe(400);
    expect((await h.api(`/v1/runs/${run.run_id}/events?after=-3`)).status).toBe(400);
    expect((await h.api(`/v1/runs/${run.run_id}/cancel?wait=soon`, { method: "POST" })).status).toBe(400);
    expect((await h.api(`/v1/runs/${run.run_id}/cancel`, { method: "POST", json: { reason: 42 } })).status).toBe(400);
    await h.events(run.run_id);
  });

  it("a fuzz of odd bodies never yields a 5xx and leaves the store consistent", async () => {
    const bodies = ["", "null", "true", "1e999", '"x"', "{}", '{"input":null}', '{"input":{"role":"user","content":1}}', "\u0000", "[]"];
    for (const body of bodies) {
      for (const path of [`/v1/threads`, `/v1/threads/${threadId}/runs`, `/v1/runs/${createId("run")}/cancel`]) {
        const response = await raw(path, { method: "POST", headers: { "content-type": "application/json" }, body });
        expect(response.status, `${path} ${JSON.stringify(body)}`).toBeLessThan(500);
        const json = await response.json();
        if (response.status >= 400) expect(json.error).toEqual(expect.any(String));
      }
    }
  });
});

describe("tenants", () => {
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
    expect((await h.api("/v1/threads", { method: "POST", json: {} })).status).toBe(401);
    const wrong = await h.api("/v1/threads", { method: "POST", json: {}, key: "nope" });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toBe("unauthorized");
  });

  it("another tenant's ids answer 404 exactly like unknown ones", async () => {
    const threadA = await h.createThread("key-a");
    const runA = await h.api(`/v1/threads/${threadA}/runs`, { method: "POST", key: "key-a", json: { input: { role: "user", content: "mine" } } });
    expect(runA.status).toBe(201);
    const foreign = [
      await h.api(`/v1/threads/${threadA}`, { key: "key-b" }),
      await h.api(`/v1/threads/${threadA}/history`, { key: "key-b" }),
      await h.api(`/v1/threads/${threadA}/checkpoints`, { key: "key-b" }),
      await h.api(`/v1/threads/${threadA}/runs`, { method: "POST", key: "key-b", json: { input: { role: "user", content: "theirs" } } }),
      await h.api(`/v1/runs/${runA.body.run_id}`, { key: "key-b" }),
      await h.api(`/v1/runs/${runA.body.run_id}/events`, { key: "key-b" }),
      await h.api(`/v1/runs/${runA.body.run_id}/steps`, { key: "key-b" }),
      await h.api(`/v1/runs/run_not-a-run-id/steps`, { key: "key-b" }),
      await h.api(`/v1/threads/${threadA}`, { method: "DELETE", key: "key-b" }),
    ];
    for (const response of foreign) {
      expect(response.status).toBe(404);
      expect(JSON.stringify(response.body)).not.toContain("mine");
    }
    // A cancel from tenant B is remembered for B only and never touches A's run.
    await h.api(`/v1/runs/${runA.body.run_id}/cancel`, { method: "POST", key: "key-b" });
    const events = await h.events(runA.body.run_id, { key: "key-a" });
    expect(events.at(-1)!.type).toBe("run.completed");
    // The same client-named run id in tenant B is a different run.
    const sameId = await h.api(`/v1/threads/${await h.createThread("key-b")}/runs`, {
      method: "POST",
      key: "key-b",
      json: { input: { role: "user", content: "b" }, run_id: runA.body.run_id },
    });
    expect(sameId.status).toBe(201);
    expect(sameId.body.status).toBe("cancelled");
  });

  it("refuses a non-loopback bind without API keys", async () => {
    const { startTidemark } = await import("../src/start-tidemark.js");
    await expect(startTidemark({ host: "0.0.0.0", port: 0, dbPath: ":memory:" })).rejects.toThrow(/loopback/);
  });
});
