import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { findFreePort, withTimeout } from "./bench-support.js";

/**
 * `tidemark serve` (the CLI as shipped) in a child process, and the supervision every server
 * child of the benchmarks gets (probe-host.ts uses it too): its stderr log collected, a bounded
 * wait until it serves, a draining stop, and a SIGKILL if the bench process exits first.
 */

/** What a child wrote on stderr (the JSON logger: one line per entry), by level. */
export interface ChildLogs {
  counts: Record<string, number>;
  /** The first warnings, errors and non-JSON lines (at most 20). */
  problems: string[];
}

/** How a stopped child exited. */
export interface ChildExit {
  code: number | null;
  signal: string | null;
  /** It did not drain within 10 s and was killed. */
  forced: boolean;
}

/** A `tidemark serve` (or probe host) child process. */
export interface ServeChild {
  readonly name: string;
  readonly url: string;
  readonly pid: number;
  logs(): ChildLogs;
  /** SIGTERM (the server drains), SIGKILL after 10 s; resolves once it exited. */
  stop(): Promise<ChildExit>;
}

/** Children still running; killed if the bench process exits without stopping them. */
const liveChildren = new Set<ChildProcess>();
let isExitHookInstalled = false;

function track(child: ChildProcess): void {
  liveChildren.add(child);
  child.once("exit", () => liveChildren.delete(child));
  if (!isExitHookInstalled) {
    isExitHookInstalled = true;
    process.once("exit", () => {
      for (const live of liveChildren) live.kill("SIGKILL");
    });
  }
}

function watchStderr(child: ChildProcess): ChildLogs {
  const logs: ChildLogs = { counts: {}, problems: [] };
  let partial = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop() ?? "";
    for (const line of lines) {
      if (line.trim() === "") continue;
      let level = "other";
      try {
        level = String((JSON.parse(line) as { level?: unknown }).level ?? "other");
      } catch {
        // Not the JSON logger: a crash or a warning from Node; kept as a problem.
      }
      logs.counts[level] = (logs.counts[level] ?? 0) + 1;
      if (level !== "info" && logs.problems.length < 20) logs.problems.push(line.slice(0, 4000));
    }
  });
  return logs;
}

function stopper(child: ChildProcess, exited: Promise<unknown>): () => Promise<ChildExit> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return { code: child.exitCode, signal: child.signalCode, forced: false };
    child.kill("SIGTERM");
    let forced = false;
    await withTimeout(exited, 10_000, "the child to drain").catch(async () => {
      forced = true;
      child.kill("SIGKILL");
      await exited;
    });
    return { code: child.exitCode, signal: child.signalCode, forced };
  };
}

/**
 * Supervises a child just spawned (call it in the same turn, before its first output is read):
 * waits until `ready` gives its URL, or rejects with its stderr when it exits first or takes over
 * 20 s, having stopped it.
 */
export async function superviseChild(name: string, child: ChildProcess, ready: Promise<string>): Promise<ServeChild> {
  track(child);
  const exited = once(child, "exit");
  const logs = watchStderr(child);
  const stop = stopper(child, exited);
  const early = exited.then(() => {
    throw new Error(`${name} exited before it was ready: ${logs.problems.join(" | ")}`);
  });
  try {
    const url = await withTimeout(Promise.race([ready, early]), 20_000, `${name} to be ready`);
    return { name, url, pid: child.pid!, logs: () => logs, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** What a stopped child reports: how it exited and what it logged. */
export type ChildReport = { child: string; logs: ChildLogs } & ChildExit;

/** Stops `child` and reports on it; each problem it logged also goes to `log`. */
export async function stopAndReport(child: ServeChild, log: (message: string) => void): Promise<ChildReport> {
  const stopped = await child.stop();
  const logs = child.logs();
  for (const problem of logs.problems) log(`${child.name}: ${problem.slice(0, 300)}`);
  return { child: child.name, ...stopped, logs };
}

/** Where the built CLI is (this file runs from dist-bench/bench; the product is built beside it in dist-bench/src). */
export const CLI_PATH = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));

export interface ServeOptions {
  name: string;
  role: "api" | "worker" | "all";
  /** A SQLite file, or a postgres:// URL (then `schema` names the schema). */
  db: string;
  schema?: string;
  outbox: string;
  /** Added to this process's environment (e.g. the demo model's pace). */
  env?: Record<string, string>;
  /** Node options before the CLI's path (e.g. `--cpu-prof`, which NODE_OPTIONS refuses). */
  nodeArgs?: readonly string[];
}

/** Starts `node dist-bench/src/cli/main.js serve …` on a free port and waits for "Tidemark serving". */
export async function startServe(options: ServeOptions): Promise<ServeChild> {
  const port = await findFreePort();
  const args = [...(options.nodeArgs ?? []), CLI_PATH, "serve", "--db", options.db, "--role", options.role, "--port", String(port), "--outbox", options.outbox];
  if (options.schema) args.push("--schema", options.schema);
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...options.env } });
  let stdout = "";
  child.stdout.setEncoding("utf8");
  const ready = new Promise<string>((resolve) => {
    child.stdout.on("data", (chunk: string) => {
      if (stdout.length < 10_000) stdout += chunk;
      const match = /Tidemark serving (\S+)/.exec(stdout);
      if (match) resolve(match[1]!);
    });
  });
  return superviseChild(options.name, child, ready);
}
