/**
 * scripts/build-if-stale.mjs (what `npm start` runs first), as a real process on a throwaway
 * package whose `build` and `build:web` scripts only record that they ran: a fresh clone builds
 * both, an unchanged tree builds nothing, and each kind of change builds exactly what it affects.
 * The script runs the npm that runs it (`npm_execpath`); here a small stand-in, so that each
 * case costs two node starts rather than npm's; one case uses the real npm on the PATH.
 */
import { spawn } from "node:child_process";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const SCRIPT = fileURLToPath(new URL("../scripts/build-if-stale.mjs", import.meta.url));

// Each fake build writes its output and appends its name to builds.log; a `fail` file makes it fail.
const FAKE_BUILD = `
import fs from "node:fs";
const target = process.argv[2];
fs.appendFileSync("builds.log", target + "\\n");
if (fs.existsSync("fail")) process.exit(3);
const output = target === "server" ? "dist/cli/main.js" : "dist/web/index.html";
fs.mkdirSync(output.slice(0, output.lastIndexOf("/")), { recursive: true });
fs.writeFileSync(output, "built");
`;

// A stand-in for npm-cli.js: \`run <script> --silent\` runs the package's script (a node command).
const FAKE_NPM = `
import { spawnSync } from "node:child_process";
import fs from "node:fs";
const [command, script] = process.argv.slice(2);
if (command !== "run") process.exit(64);
const [program, ...args] = JSON.parse(fs.readFileSync("package.json", "utf8")).scripts[script].split(" ");
if (program !== "node") process.exit(65);
process.exit(spawnSync(process.execPath, args, { stdio: "inherit" }).status ?? 1);
`;

describe("scripts/build-if-stale.mjs (real process)", { timeout: 120_000 }, () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), "tidemark-build-if-stale-"));
    const scripts = { build: "node fake-build.mjs server", "build:web": "node fake-build.mjs web" };
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "fixture", private: true, type: "module", scripts }));
    writeFileSync(join(root, "fake-build.mjs"), FAKE_BUILD);
    writeFileSync(join(root, "fake-npm.mjs"), FAKE_NPM);
    for (const [file, text] of Object.entries({
      "src/cli/main.ts": "export {};",
      "src/cli/main.test.ts": "test",
      "web/app.tsx": "export {};",
      "tsconfig.json": "{}",
      "tsconfig.build.json": "{}",
      "package-lock.json": "{}",
    })) {
      mkdirSync(join(root, file, ".."), { recursive: true });
      writeFileSync(join(root, file), text);
    }
  });
  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
  });

  /** Runs the script in the fixture (under the stand-in npm, or the PATH's); what it built this time, and its exit code. */
  async function run(npm: "stand-in" | "path" = "stand-in"): Promise<{ code: number; built: string[] }> {
    const before = builds();
    const env: NodeJS.ProcessEnv = { ...process.env, npm_execpath: join(root, "fake-npm.mjs") };
    if (npm === "path") delete env.npm_execpath;
    const child = spawn(process.execPath, [SCRIPT], { cwd: root, env, stdio: ["ignore", "ignore", "inherit"] });
    const code = await new Promise<number>((resolve) => child.once("exit", (exitCode) => resolve(exitCode ?? -1)));
    return { code, built: builds().slice(before.length) };
  }

  function builds(): string[] {
    try {
      return readFileSync(join(root, "builds.log"), "utf8").split("\n").filter(Boolean);
    } catch {
      return [];
    }
  }

  const edit = (file: string, text: string) => writeFileSync(join(root, file), text);

  it("builds both on a fresh clone (with the npm on the PATH), then nothing until a source changes", async () => {
    expect(await run("path")).toEqual({ code: 0, built: ["server", "web"] });
    expect(await run("path")).toEqual({ code: 0, built: [] });
  });

  it("builds what each change affects, and nothing for a touch or a test file", async () => {
    await run();
    edit("web/app.tsx", "export const changed = 1;");
    expect((await run()).built).toEqual(["web"]);
    // The web app imports the client from src/, so a source change builds both.
    edit("src/cli/main.ts", "export const changed = 1;");
    expect((await run()).built).toEqual(["server", "web"]);
    utimesSync(join(root, "src/cli/main.ts"), new Date(), new Date(Date.now() + 60_000));
    appendFileSync(join(root, "src/cli/main.test.ts"), "\nmore test");
    expect((await run()).built).toEqual([]);
    edit("tsconfig.build.json", '{"compilerOptions":{}}');
    expect((await run()).built).toEqual(["server"]);
    edit("package-lock.json", '{"lockfileVersion":3}');
    expect((await run()).built).toEqual(["server", "web"]);
  });

  it("builds again for an added or deleted source, or a missing output", async () => {
    await run();
    edit("src/cli/new-file.ts", "export {};");
    expect((await run()).built).toEqual(["server", "web"]);
    unlinkSync(join(root, "src/cli/new-file.ts"));
    expect((await run()).built).toEqual(["server", "web"]);
    unlinkSync(join(root, "dist/web/index.html"));
    expect((await run()).built).toEqual(["web"]);
  });

  it("stops at a failed build, which is tried again next time", async () => {
    edit("fail", "");
    expect(await run()).toEqual({ code: 3, built: ["server"] });
    unlinkSync(join(root, "fail"));
    expect(await run()).toEqual({ code: 0, built: ["server", "web"] });
    expect(await run()).toEqual({ code: 0, built: [] });
  });
});
