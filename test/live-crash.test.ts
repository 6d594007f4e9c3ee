/**
 * A live turn's server dies mid-answer (SIGKILL of a real `tidemark serve`): after the restart the
 * turn's run fails (`worker_lost`), and nothing the user did not hear was published. A live turn's
 * run is created with `recovery_policy: "fail"`: its playback lived in the dead process.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitForRun } from "./support/cluster.js";
import { connectLive } from "./support/live-client.js";
import { freePort, runCli, startServerProcess, type ServerProcess } from "./support/server-process.js";

const SLOW_DEMO = { TIDEMARK_DEMO_WORDS_PER_SECOND: "60", TIDEMARK_DEMO_WORDS: "400", TIDEMARK_LEASE_MS: "400" };

describe("a live turn when its server is killed", () => {
  let dir: string;
  let server: ServerProcess | undefined;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-live-crash-"));
  });
  afterAll(() => {
    server?.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("fails with worker_lost after the restart and publishes no answer nobody heard whole", async () => {
    const dbPath = join(dir, "tidemark.db");
    const port = await freePort();
    server = await startServerProcess({ dbPath, port, env: SLOW_DEMO });
    const base = server.url;
    const created = await fetch(`${base}/v1/threads`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    const threadId = ((await created.json()) as { thread_id: string }).thread_id;
    const client = await connectLive(base, threadId);
    client.send({ type: "user.stopped_speaking", transcript: "Tell me everything" });
    const started = await client.next("turn.started", () => true, 0);
    const messageId = started.message_id as string;
    await client.next("output.delta", () => client.sentText(messageId).length >= 30);
    client.send({ type: "playback", message_id: messageId, played_chars: 10 });

    server.child.kill("SIGKILL");
    await server.exited;
    await client.close();
    server = await startServerProcess({ dbPath, port, env: SLOW_DEMO });

    const failed = await waitForRun(base, started.run_id as string, (run) => run.status === "failed");
    expect(failed).toMatchObject({ failure_reason: "worker_lost", published_message_id: null });
    const history = (await (await fetch(`${base}/v1/threads/${threadId}/history`)).json()) as { messages: { role: string }[] };
    expect(history.messages.map((message) => message.role)).toEqual(["user"]);
    server.child.kill("SIGTERM");
    await server.exited;
    server = undefined;
    expect((await runCli(["check", "--db", dbPath])).code).toBe(0);
  });
});
