import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunEvent } from "../src/core/index.js";
import { readSseEvents } from "../src/stream/index.js";
import { startTestProvider, type TestProvider } from "../src/testing/index.js";
import { freePort, runCli, startServerProcess } from "./support/server-process.js";

describe("tidemark serve --model (real process)", () => {
  let provider: TestProvider;
  let dir: string;
  beforeAll(async () => {
    provider = await startTestProvider({ scenario: { chunks: 6, intervalMs: 0 } });
    dir = mkdtempSync(join(tmpdir(), "tidemark-cli-models-"));
  });
  afterAll(async () => {
    await provider.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("openai-compatible:<model> reads from TIDEMARK_OPENAI_BASE_URL with TIDEMARK_OPENAI_API_KEY", async () => {
    const port = await freePort();
    const server = await startServerProcess({
      dbPath: join(dir, "models.db"),
      port,
      env: { TIDEMARK_MODEL: "openai-compatible:local-llm", TIDEMARK_OPENAI_BASE_URL: provider.url, TIDEMARK_OPENAI_API_KEY: "sk-cli" },
    });
    try {
      const post = (path: string, body: unknown) =>
        fetch(`${server.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(
          (response) => response.json() as Promise<any>,
        );
      const thread = await post("/v1/threads", {});
      const run = await post(`/v1/threads/${thread.thread_id}/runs`, { input: { role: "user", content: "hi there" } });
      expect(run.model).toBe("openai-compatible:local-llm");
      const response = await fetch(`${server.url}/v1/runs/${run.run_id}/events`);
      const events: RunEvent[] = [];
      for await (const message of readSseEvents(response.body!)) events.push(JSON.parse(message.data) as RunEvent);
      expect(events.at(-1)!.type).toBe("run.completed");
      const streamed = provider.requests.find((request) => (request.body as { stream?: boolean }).stream);
      expect(streamed).toMatchObject({ model: "local-llm", authorization: "Bearer sk-cli" });
      const health = await fetch(`${server.url}/healthz`).then((r) => r.json() as Promise<any>);
      expect(health.model).toBe("openai-compatible:local-llm");
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  it("refuses an unknown model or a missing base URL with a clear message", async () => {
    const unknown = await runCli(["serve", "--port", String(await freePort()), "--db", join(dir, "x.db"), "--model", "llama-magic"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown model "llama-magic"/);
    const env = { ...process.env };
    delete env.TIDEMARK_OPENAI_BASE_URL;
    const missing = await runCli(["serve", "--port", String(await freePort()), "--db", join(dir, "y.db"), "--model", "openai-compatible:x"], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/TIDEMARK_OPENAI_BASE_URL/);
  });
});
