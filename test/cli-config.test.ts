/**
 * `tidemark serve` with a configuration that cannot work (real processes): it refuses to start,
 * with exit code 2 and one line naming the setting, never a stack trace, never any part of a
 * secret, and before it opens (or creates) the database.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, runCli } from "./support/server-process.js";

/** The environment without any model, key or Tidemark setting of the machine running the tests. */
function cleanEnvironment(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("TIDEMARK_") && !name.endsWith("_API_KEY")) env[name] = value;
  }
  return { ...env, ...extra };
}

/** Every substring of `secret` at least 3 characters long is absent from `text`. */
function expectNoPartOf(secret: string, text: string): void {
  for (let start = 0; start + 3 <= secret.length; start++) expect(text).not.toContain(secret.slice(start, start + 3));
}

describe("tidemark serve refuses a configuration that cannot work (real process)", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "tidemark-cli-config-"));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = async (env: Record<string, string>, args: string[] = []) => {
    const db = join(dir, `db-${Math.random().toString(36).slice(2)}.db`);
    const result = await runCli(["serve", "--port", String(await freePort()), "--db", db, ...args], cleanEnvironment(env));
    expect(result.code).toBe(2);
    expect(result.stdout).not.toContain("Tidemark serving");
    // One line, no stack trace, nothing opened.
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).not.toMatch(/^\s+at /m);
    expect(existsSync(db)).toBe(false);
    return result.stderr.trim();
  };

  it.each([
    ["an entry without a tenant", "Qx7vLr9pZs:", "TIDEMARK_API_KEYS: entry 1 of 1 has no tenant after its \":\""],
    ["an entry without a key", ":tenant_a", "TIDEMARK_API_KEYS: entry 1 of 1 has no key before its \":\""],
    ["an entry without a separator", "k_live_Qx7vLr9pZs", "TIDEMARK_API_KEYS: entry 1 of 1 has no \":\" between its key and its tenant"],
    ["one bad entry among good ones", "Ab3dEf9hIj:tenant_a,Qx7vLr9pZs", "TIDEMARK_API_KEYS: entry 2 of 2 has no \":\" between its key and its tenant"],
    ["a key given twice", "Qx7vLr9pZs:tenant_a,Ab3dEf9hIj:tenant_b,Qx7vLr9pZs:tenant_c", "TIDEMARK_API_KEYS: entries 1 and 3 have the same key"],
  ])("a malformed TIDEMARK_API_KEYS: %s", async (_case, value, expected) => {
    const message = await serve({ TIDEMARK_API_KEYS: value });
    expect(message).toBe(`tidemark: ${expected}${expected.endsWith("same key") ? " (a key names one tenant)" : ""}. Write key:tenant entries separated by commas.`);
    for (const secret of ["Qx7vLr9pZs", "Ab3dEf9hIj", "k_live_Qx7vLr9pZs"]) expectNoPartOf(secret, message);
  });

  it.each([
    ["openai", { OPENAI_API_KEY: "" }, "--model openai:gpt-4o-mini needs an API key: set OPENAI_API_KEY (or TIDEMARK_OPENAI_API_KEY)."],
    ["anthropic", { OPENAI_API_KEY: "sk-not-for-anthropic" }, "--model anthropic:claude-sonnet-4-5 needs an API key: set ANTHROPIC_API_KEY (or TIDEMARK_ANTHROPIC_API_KEY)."],
  ])("--model %s:… without its API key", async (provider, env, expected) => {
    const model = provider === "openai" ? "openai:gpt-4o-mini" : "anthropic:claude-sonnet-4-5";
    expect(await serve(env, ["--model", model])).toBe(`tidemark: ${expected}`);
  });

  it("an openai-compatible address that is not a URL, without repeating it", async () => {
    const message = await serve({ TIDEMARK_OPENAI_BASE_URL: "127.0.0.1:11434/v1?key=s3cr3tQx7vLr9pZs" }, ["--model", "openai-compatible:llama3.1"]);
    expect(message).toBe("tidemark: TIDEMARK_OPENAI_BASE_URL must be an http:// or https:// URL.");
    expectNoPartOf("s3cr3tQx7vLr9pZs", message);
  });

  it("a numeric setting that is not a number", async () => {
    expect(await serve({ TIDEMARK_LEASE_MS: "15s" })).toBe("tidemark: TIDEMARK_LEASE_MS must be a number of at least 0.");
  });

  it("an argument that is not valid exits 2 with commander's message", async () => {
    const result = await runCli(["serve", "--port", "eighty"], cleanEnvironment({}));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/port must be a whole number/);
  });
});
