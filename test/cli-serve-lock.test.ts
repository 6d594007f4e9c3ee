/**
 * One `tidemark serve` per SQLite file (real processes): a second server on the same file, however
 * its path is spelled, is refused with exit code 2 and a message naming the file, and the first
 * goes on serving; `tidemark check` still reads the live file. The hold is an OS lock: after a
 * kill -9 the next server starts at once, and after a clean stop too.
 */
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, runCli, startServerProcess, type ServerProcess } from "./support/server-process.js";

describe("tidemark serve holds its SQLite file (real processes)", () => {
  let dir: string;
  const servers: ServerProcess[] = [];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-serve-lock-"));
  });
  afterAll(async () => {
    for (const server of servers) {
      server.child.kill("SIGKILL");
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (dbPath: string): Promise<ServerProcess> => {
    const server = await startServerProcess({ dbPath, port: await freePort() });
    servers.push(server);
    return server;
  };

  it("refuses a second server on the file, and lets the next one start after a kill -9 or a clean stop", async () => {
    const dbPath = join(dir, "tidemark.db");
    const first = await start(dbPath);
    const thread = await fetch(`${first.url}/v1/threads`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(thread.status).toBe(201);

    symlinkSync(dbPath, join(dir, "alias.db"));
    for (const spelling of [dbPath, join(dir, ".", "tidemark.db"), join(dir, "alias.db")]) {
      const second = await runCli(["serve", "--port", String(await freePort()), "--db", spelling]);
      expect(second.code).toBe(2);
      expect(second.stdout).not.toContain("Tidemark serving");
      expect(second.stderr.trim()).toBe(
        `tidemark: Another Tidemark process is serving ${spelling} (it holds ${dbPath}.lock). Stop it first, or give this one another --db.`,
      );
    }
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    // The checker reads the live file beside its server.
    const check = await runCli(["check", "--db", dbPath]);
    expect(check).toMatchObject({ code: 0, stdout: "0 violations in 1 thread (0 runs, 0 messages)\n" });

    first.child.kill("SIGKILL");
    expect(await first.exited).toBe("SIGKILL");
    const afterCrash = await start(dbPath);
    expect((await fetch(`${afterCrash.url}/healthz`)).status).toBe(200);
    afterCrash.child.kill("SIGTERM");
    expect(await afterCrash.exited).toBe(0);
    const afterStop = await start(dbPath);
    const threads = await fetch(`${afterStop.url}/v1/threads`).then((response) => response.json() as Promise<{ threads: unknown[] }>);
    expect(threads.threads).toHaveLength(1);
  });
});
