#!/usr/bin/env node
/**
 * `npm start` builds the server and the web app only when their sources changed since the build
 * this script last made, so an unchanged tree starts at once (issue 11, item 14).
 *
 * "Changed" is by content, not by time: each target's inputs (paths and bytes) are hashed, and
 * the hash of the last successful build is kept in dist/.build-stamps/. A touched but unchanged
 * file builds nothing; an edited, added or deleted source, a changed tsconfig or package-lock,
 * or a missing output builds again. Run from the package root (npm does).
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

/** What each build reads, and the file that shows it was made. The web app imports the client from src/. */
const TARGETS = [
  { name: "server", script: "build", inputs: ["src", "tsconfig.json", "tsconfig.build.json", "package-lock.json"], output: "dist/cli/main.js" },
  { name: "web app", script: "build:web", inputs: ["web", "src", "tsconfig.json", "package-lock.json"], output: "dist/web/index.html" },
];

/** Neither built nor read by a build. */
const IGNORED_DIRECTORIES = new Set(["node_modules", "dist", ".git"]);
const IGNORED_FILE = /\.test\.tsx?$/;

const root = process.cwd();
const stampDirectory = path.join(root, "dist", ".build-stamps");

for (const target of TARGETS) {
  const hash = hashInputs(target.inputs);
  const stampPath = path.join(stampDirectory, `${target.script.replace(/\W/g, "-")}.sha256`);
  const isFresh = fs.existsSync(path.join(root, target.output)) && readStamp(stampPath) === hash;
  if (isFresh) continue;
  process.stdout.write(`Building the ${target.name} (its sources changed since the last build)…\n`);
  const result = runScript(target.script);
  if (result !== 0) process.exit(result);
  // The hash of the sources as they were when the build began: a change made meanwhile builds again next time.
  fs.mkdirSync(stampDirectory, { recursive: true });
  fs.writeFileSync(stampPath, `${hash}\n`);
}

/** One hash over every input file's path and bytes, in a fixed order. */
function hashInputs(inputs) {
  const files = inputs.flatMap((input) => listFiles(path.join(root, input)));
  const hash = createHash("sha256");
  for (const file of [...new Set(files)].sort()) {
    hash.update(`${path.relative(root, file)}\0`);
    hash.update(fs.readFileSync(file));
    hash.update("\0");
  }
  return hash.digest("hex");
}

function listFiles(entry) {
  let stat;
  try {
    stat = fs.statSync(entry);
  } catch {
    return [];
  }
  if (stat.isFile()) return IGNORED_FILE.test(entry) ? [] : [entry];
  if (!stat.isDirectory()) return [];
  return fs
    .readdirSync(entry)
    .filter((name) => !IGNORED_DIRECTORIES.has(name))
    .flatMap((name) => listFiles(path.join(entry, name)));
}

function readStamp(stampPath) {
  try {
    return fs.readFileSync(stampPath, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** `npm run <script> --silent` with the npm that runs this script; its exit code. */
function runScript(script) {
  const npm = process.env.npm_execpath;
  const [command, args] = npm ? [process.execPath, [npm, "run", script, "--silent"]] : ["npm", ["run", script, "--silent"]];
  const result = spawnSync(command, args, { stdio: "inherit", cwd: root });
  return result.status ?? 1;
}
