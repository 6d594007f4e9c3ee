/**
 * `tidemark serve` reads its redactor from `TIDEMARK_REDACT` and `TIDEMARK_REDACT_PATTERNS`
 * (docs/data/redaction.md): a value that cannot work exits 2 naming the setting, never echoing it;
 * one that can is applied to the process's own JSON log lines on stderr; a config file's
 * `redactor` is used instead.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI, freePort, runCli } from "./support/server-process.js";

describe("tidemark serve: the redaction settings (real process)", () => {
  const dir = mkdtempSync(join(tmpdir(), "tidemark-cli-redact-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("refuses an unknown rule or a pattern list that is not one, with exit 2 and the setting's name only", async () => {
    const serve = async (env: Record<string, string>) =>
      runCli(["serve", "--port", String(await freePort()), "--db", join(dir, "refused.db")], { ...process.env, ...env });
    const rule = await serve({ TIDEMARK_REDACT: "email,hunter2" });
    expect(rule.code).toBe(2);
    expect(rule.stderr).toMatch(/^tidemark: TIDEMARK_REDACT must be default, off, or a comma-separated list of email, card\.\n$/);
    const patterns = await serve({ TIDEMARK_REDACT_PATTERNS: '["(hunter2"]' });
    expect(patterns.code).toBe(2);
    expect(patterns.stderr).toMatch(/^tidemark: TIDEMARK_REDACT_PATTERNS must be a JSON array of regular expressions \(entry 1 is not a valid regular expression\)\.\n$/);
    expect(rule.stderr + patterns.stderr).not.toContain("hunter2");
  });

  /** Serves until it says so, stops it (SIGTERM), and returns its JSON log lines and all of its stderr. */
  async function serveOnce(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}) {
    const port = await freePort();
    const child = spawn(process.execPath, [CLI, "serve", "--port", String(port), "--no-web", ...args], {
      env: { ...process.env, ...options.env },
      cwd: options.cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    await new Promise<void>((resolve, reject) => {
      let stdout = "";
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes("Tidemark serving")) resolve();
      });
      void exited.then((code) => reject(new Error(`serve exited (${code}): ${stderr}`)));
    });
    // Answered: its start finished (the SIGTERM handler is set), so the stop is its own drain.
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    const lines = stderr
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    return { lines, stderr };
  }

  it("redacts its own log lines: an email in the database path, and a pattern of the deployment's", async () => {
    const folder = join(dir, "owner-ann@example.org");
    mkdirSync(folder);
    const { lines, stderr } = await serveOnce(["--db", join(folder, "secret-project-x42.db")], { env: { TIDEMARK_REDACT_PATTERNS: '["secret-project-\\\\w+"]' } });
    const serving = lines.find((line) => line.message === "tidemark serving");
    expect(serving).toBeDefined();
    expect(serving!.db).toMatch(/\/\*\*\*@example\.org\/\[redacted\]\.db$/);
    expect(stderr).not.toContain("ann@example.org");
    expect(stderr).not.toContain("secret-project-x42");
  });

  it("a config file's redactor is used instead of the settings' one", async () => {
    const cwd = join(dir, "with-config");
    mkdirSync(cwd);
    writeFileSync(join(cwd, "tidemark.config.mjs"), 'export default { agents: [], redactor: (text) => text.replaceAll("x42", "[mine]") };\n');
    const { lines } = await serveOnce(["--db", join(cwd, "ann@example.org-x42.db")], { cwd, env: { TIDEMARK_REDACT: "email" } });
    const serving = lines.find((line) => line.message === "tidemark serving");
    expect(serving).toMatchObject({ config: "tidemark.config.mjs" });
    // The config's function alone: the address stays, its own pattern goes.
    expect(serving!.db).toMatch(/\/ann@example\.org-\[mine\]\.db$/);
  });
});
